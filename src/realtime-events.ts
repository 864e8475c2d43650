import crypto from 'node:crypto'
import feathersCore from '@feathersjs/feathers'
import type { Channel } from '@feathersjs/transport-commons'
import type { Redis } from 'ioredis'
import type { Application, HookContext, Role } from './declarations.js'
import { registrationOf } from './engine/tenant-resource.js'
import { pubSubConnections } from './redis-pubsub.js'
import { organizationChannel, visitorChannel } from './realtime-connections.js'
import type { Connection } from './realtime-connections.js'
import { secretFieldsOf } from './secret-fields.js'
import { chatClosed, visitorView } from './services/inbox/public-webchat/public-webchat.class.js'

/**
 * Live events of every tenant record over Socket.io (docs/realtime.md). Every service the
 * resource factory registers publishes, and so do the account services below: a new resource
 * publishes the day it is registered, with no declaration of its own.
 *
 * - Audience: the connections in the channel of the record's organization that may read the
 *   resource there (its read roles; API-key connections not where the resource refuses keys).
 *   A user's own account goes to that user's connections only (nobody else may read it).
 * - Shape: the record as GET /<path>/:id answers it (the read model, with the record joins, and
 *   a deleted record with its deleted_at): every service emits its records as Postgres wrote them
 *   in the write's own statement, so nothing is read again; hidden and secret fields are never in it.
 * - Order: the events of an instance reach its sockets in the order the services emitted them.
 * - Across instances (REDIS_URL): each event is relayed once, in its external shape (never a
 *   stored row: no hash or secret travels), and every other instance publishes it to its own
 *   sockets as if its own service had emitted it.
 */

type Row = Record<string, any>

/** The account services: not tenant resources, but their records belong to organizations. */
const ACCOUNT_SERVICES = ['users', 'organizations'] as const
const SERVICE_EVENTS = ['created', 'updated', 'patched', 'removed'] as const

/** Every service whose record events reach sockets. */
export const publishedPaths = (app: Application): string[] =>
  Object.keys(app.services).filter((path) => registrationOf(app, path) === 'tenant-resource' || (ACCOUNT_SERVICES as readonly string[]).includes(path))

/** Who may receive a resource's events in an organization: what a list call (find) there needs. */
interface Audience {
  roles?: Role[]
  refusesApiKeys: boolean
}

function audienceOf(app: Application, path: string): Audience {
  const options = feathersCore.getServiceOptions(app.service(path as any)) as any
  const refuses = options?.refusesApiKeys
  return { roles: options?.readRoles, refusesApiKeys: refuses === true || (Array.isArray(refuses) && refuses.includes('find')) }
}

/** A channel some connection joined (asking app.channel for any other would create it, empty, for good). */
const existingChannel = (app: Application, name: string) => (app.channels.includes(name) ? app.channel(name) : undefined)

/** Whether a connection may read the resource in this organization, with its credentials as they are now. */
export function mayRead(connection: Connection, organizationId: number, audience: Audience) {
  const caller = connection.caller
  const role = caller?.roles.get(organizationId)
  if (!caller || !role) return false
  if (audience.refusesApiKeys && caller.apiKeyOrganizationId !== undefined) return false
  return !audience.roles || audience.roles.includes(role)
}

/** The fields a resource sends: its result schema's, without hidden and secret ones. */
function externalFields(app: Application, path: string): Set<string> | undefined {
  const service = app.service(path as any) as any
  const schema = (feathersCore.getServiceOptions(service) as any)?.docs?.schemas?.result
  if (!schema?.properties) return undefined
  const withheld = new Set<string>([...(service.options?.read?.hidden ?? []), ...secretFieldsOf(service)])
  return new Set(Object.keys(schema.properties).filter((name) => !withheld.has(name)))
}

/** The record as an event sends it: only the resource's external fields, as JSON writes them. */
function externalRecord(data: Row, fields: Set<string> | undefined): Row {
  const json: Row = JSON.parse(JSON.stringify(data))
  if (!fields) return json
  return Object.fromEntries(Object.entries(json).filter(([name]) => fields.has(name)))
}

/** A relayed event: the instance it comes from, and the record in its external shape. */
interface RelayedEvent {
  from: string
  path: string
  event: string
  data: Row
}

/**
 * With REDIS_URL, the events of every published service reach the sockets of every instance:
 * each instance publishes its own events to its own sockets at once, and relays each one over
 * Redis pub/sub (EVENTS_CHANNEL) in its external shape; the others emit it on the same service
 * (so their listeners and publishers run as for their own events). Redis never holds up
 * start-up or an event: while it is unreachable, only the relay to other instances is missed.
 */
class EventRelay {
  private readonly instance = crypto.randomUUID()
  private readonly publisher: Redis
  private readonly subscriber: Redis
  readonly ready: Promise<unknown>

  constructor(private readonly app: Application, url: string) {
    const { publisher, subscriber } = pubSubConnections(url)
    this.publisher = publisher
    this.subscriber = subscriber
    const channel = app.get('eventsChannel')
    this.ready = subscriber.connect().then(() => subscriber.subscribe(channel))
    this.ready.catch(() => undefined)
    publisher.connect().catch(() => undefined)
    subscriber.on('message', (_channel: string, raw: string) => this.receive(raw))
  }

  send(path: string, event: string, data: Row) {
    if (this.publisher.status !== 'ready') return
    const message: RelayedEvent = { from: this.instance, path, event, data }
    this.publisher.publish(this.app.get('eventsChannel'), JSON.stringify(message)).catch(() => undefined)
  }

  private receive(raw: string) {
    let message: RelayedEvent
    try {
      message = JSON.parse(raw)
    } catch {
      return
    }
    if (message.from === this.instance || !(message.path in this.app.services)) return
    const service = this.app.service(message.path as any) as any
    service.emit(message.event, message.data, { app: this.app, service, path: message.path, relayed: true })
  }

  close() {
    this.publisher.disconnect()
    this.subscriber.disconnect()
  }
}

/** Configured after the services: every published service gets its publishers. */
export const publishRecordEvents = (app: Application) => {
  const url = app.get('redisUrl')
  const relay = url ? new EventRelay(app, url) : undefined
  // The tests (and a health probe) may wait for the relay's subscription.
  ;(app as any).sync = { ready: relay?.ready ?? Promise.resolve() }
  let tail: Promise<unknown> = Promise.resolve()

  for (const path of publishedPaths(app)) {
    const audience = audienceOf(app, path)
    const fields = externalFields(app, path)
    /** The channels an event goes to, each with the record as that audience receives it. */
    const channelsOf = async (record: Row): Promise<Channel[]> => {
      if (path === 'users') {
        const organizations = app.channels.filter((name) => name.startsWith('organizations/'))
        if (organizations.length === 0) return []
        const own = app.channel(organizations).filter((connection: Connection) => connection.caller?.userId === record.id)
        if (own.length === 0) return []
        return [own.send(record)]
      }
      const organizationId = path === 'organizations' ? record.id : record.organization_id
      const team = existingChannel(app, organizationChannel(organizationId))?.filter((connection: Connection) => mayRead(connection, organizationId, audience))
      const visitors = path === 'conversation-messages-webchat' && record.direction !== 'note'
        ? existingChannel(app, visitorChannel(organizationId, record.conversation_id)) : undefined
      if (!team?.length && !visitors?.length) return []
      const channels = team?.length ? [team.send(record)] : []
      if (visitors?.length) channels.push(visitors.send((await visitorView(app.get('knex'), [record]))[0]))
      return channels
    }

    /** Whether any connection here could receive the record's event (else it costs nothing, relay aside). */
    const heardHere = (data: Row) => {
      if (path === 'users') return app.channels.length > 0
      const organizationId = path === 'organizations' ? data.id : data.organization_id
      return Boolean(existingChannel(app, organizationChannel(organizationId)) ||
        (path === 'conversation-messages-webchat' && existingChannel(app, visitorChannel(organizationId, data.conversation_id))))
    }

    const publisher = (event: string) => (data: Row, hook: HookContext & { relayed?: boolean }) => {
      if (!data || typeof data !== 'object' || typeof data.id !== 'number') return undefined
      if (!heardHere(data) && (!relay || hook?.relayed)) return undefined
      // An event another instance relayed (EventRelay) is in its external shape already, and is not relayed again.
      const shaped = Promise.resolve(hook?.relayed ? data : externalRecord(data, fields))
      const channels = shaped.then(channelsOf)
      // Settled in emission order: a record's created event never overtakes its patched one.
      const ordered = tail.then(async () => {
        if (!hook?.relayed) relay?.send(path, event, await shaped)
        return channels
      })
      tail = ordered.catch(() => undefined)
      return ordered.catch((error) => {
        app.get('logger').warn({ err: error, path, event }, 'realtime: an event could not be published')
        return undefined
      })
    }
    const service = app.service(path as any) as any
    // The standard events, and those a service declares besides (contacts' erased).
    const declared: string[] = (feathersCore.getServiceOptions(service) as any)?.events ?? []
    for (const event of [...SERVICE_EVENTS, ...declared]) service.publish(event, publisher(event))
  }

  // A chat blocked or deleted ends its visitors' sockets as the change is announced (on every
  // instance: the event reaches each one), before any later event of it can be published to them.
  const endClosedChat = (conversation: { organization_id: number; id: number; is_blocked: boolean; deleted_at: Date | string | null }) => {
    if (!chatClosed(conversation)) return
    const visitors = existingChannel(app, visitorChannel(conversation.organization_id, conversation.id))?.connections ?? []
    for (const connection of [...visitors]) app.emit('disconnect', connection)
  }
  app.service('conversations').on('patched', endClosedChat)
  app.service('conversations').on('removed', endClosedChat)

  app.hooks({
    teardown: [
      async (_context: unknown, next: () => Promise<void>) => {
        relay?.close()
        await next()
      }
    ]
  })
}
