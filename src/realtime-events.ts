import crypto from 'node:crypto'
import feathersCore from '@feathersjs/feathers'
import { getDispatch } from '@feathersjs/schema'
import type { Channel } from '@feathersjs/transport-commons'
import type { Redis } from 'ioredis'
import type { Application, HookContext, Role } from './declarations.js'
import { RecordService } from './engine/record-service.js'
import { RenderedAnswer, isRendered } from './engine/rendered-answer.js'
import { declarationOf, registrationOf } from './engine/tenant-resource.js'
import { representRecord } from './hooks/resolve-records.js'
import { pubSubConnections } from './redis-pubsub.js'
import { organizationChannel, visitorChannel } from './realtime-connections.js'
import type { Connection } from './realtime-connections.js'
import { secretFieldsOf } from './secret-fields.js'
import { chatClosed, visitorView } from './services/public-webchat/public-webchat.class.js'

/**
 * Live events of every tenant record over Socket.io (docs/realtime.md). Every service the
 * resource factory registers publishes, and so do the account services below: a new resource
 * publishes the day it is registered, with no declaration of its own.
 *
 * - Audience: the connections in the channel of the record's organization that may read the
 *   resource there (its read roles; API-key connections not where the resource refuses keys).
 *   A user's own account goes to that user's connections only (nobody else may read it).
 * - Shape: the record as GET /<path>/:id answers it (the read model, with the record joins, and
 *   a deleted record with its deleted_at), read after the commit; hidden and secret fields are
 *   never in it. Records a batch emits together are read in one statement per service.
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

/** Whether the data is (an element of) the answer of the call that emitted it, i.e. already resolved. */
function answered(hook: HookContext | undefined, data: unknown) {
  if (!hook?.params) return false
  const result = hook.result as any
  return result === data || (Array.isArray(result) && result.includes(data)) || (Array.isArray(result?.data) && result.data.includes(data))
}

/**
 * A record's external shape from what its service emitted, without the database: the answer's
 * dispatch (what the external resolver sent), a rendered answer parsed, or a stored row through
 * the resource's resolvers; then only the resource's external fields, as JSON writes them.
 */
async function externalRecord(app: Application, path: string, data: Row, hook: HookContext | undefined, fields: Set<string> | undefined): Promise<Row> {
  let record: unknown = data instanceof RenderedAnswer ? JSON.parse(data.text) : data
  if (!isRendered(data)) {
    const dispatched = getDispatch(data)
    if (dispatched) record = dispatched
    else if (!answered(hook, data)) {
      const resolvers = declarationOf(app, path)?.resolvers
      if (resolvers) record = await representRecord(resolvers.result ?? [], resolvers.external)(data, hook ?? ({ app, params: {}, path, method: 'get' } as any))
    }
  }
  const json: Row = JSON.parse(JSON.stringify(record))
  if (!fields) return json
  return Object.fromEntries(Object.entries(json).filter(([name]) => fields.has(name)))
}

interface Group {
  ids: Set<number>
  rows: Promise<Map<number, Row>>
  settle: (read: () => Promise<Map<number, Row>>) => void
}

/**
 * Reads records as a read by id answers them (deleted ones too), the reads asked for in one turn
 * of the event loop together: one statement per service and organization, whatever the number
 * of records a batch wrote.
 */
class RecordReader {
  private pending = new Map<string, Group>()

  constructor(private readonly app: Application) {}

  read(path: string, organizationId: number | undefined, id: number): Promise<Row | undefined> {
    const key = `${path} ${organizationId ?? ''}`
    let group = this.pending.get(key)
    if (!group) {
      let settle!: Group['settle']
      const rows = new Promise<Map<number, Row>>((resolve, reject) => {
        settle = (read) => read().then(resolve, reject)
      })
      group = { ids: new Set(), rows, settle }
      this.pending.set(key, group)
      if (this.pending.size === 1) setImmediate(() => this.flush())
    }
    group.ids.add(id)
    return group.rows.then((rows) => rows.get(id))
  }

  private flush() {
    const groups = [...this.pending.entries()]
    this.pending.clear()
    for (const [key, group] of groups) {
      const [path, organization] = key.split(' ')
      group.settle(() => this.readGroup(path, organization ? Number(organization) : undefined, [...group.ids]))
    }
  }

  private async readGroup(path: string, organizationId: number | undefined, ids: number[]) {
    const service = this.app.service(path as any) as unknown as RecordService<any>
    const joins = declarationOf(this.app, path)?.joins
    const query = { ...(organizationId === undefined ? {} : { organization_id: organizationId }), id: { $in: ids } }
    const rows: Row[] = await service._find({ query, paginate: false, withDeleted: true, relations: joins?.record } as any)
    return new Map(rows.map((row) => [Number(row.id), row]))
  }
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
  const reader = new RecordReader(app)
  const url = app.get('redisUrl')
  const relay = url ? new EventRelay(app, url) : undefined
  // The tests (and a health probe) may wait for the relay's subscription.
  ;(app as any).sync = { ready: relay?.ready ?? Promise.resolve() }
  let tail: Promise<unknown> = Promise.resolve()

  for (const path of publishedPaths(app)) {
    const audience = audienceOf(app, path)
    const fields = externalFields(app, path)
    const readable = app.service(path as any) instanceof RecordService

    /** The record as a read by id answers it now; none when it is gone (or unreadable): the event's own shape then. */
    const readBack = async (organizationId: number | undefined, id: number) =>
      readable ? reader.read(path, organizationId, id).catch((error) => {
        app.get('logger').warn({ err: error, path, id }, 'realtime: an event\'s record could not be read back; sent as emitted')
        return undefined
      }) : undefined

    /** The channels an event goes to, each with the record as that audience receives it. */
    const channelsOf = async (record: Row): Promise<Channel[]> => {
      if (path === 'users') {
        const organizations = app.channels.filter((name) => name.startsWith('organizations/'))
        if (organizations.length === 0) return []
        const own = app.channel(organizations).filter((connection: Connection) => connection.caller?.userId === record.id)
        if (own.length === 0) return []
        return [own.send((await readBack(undefined, record.id)) ?? record)]
      }
      const organizationId = path === 'organizations' ? record.id : record.organization_id
      const team = existingChannel(app, organizationChannel(organizationId))?.filter((connection: Connection) => mayRead(connection, organizationId, audience))
      const visitors = path === 'conversation-messages-webchat' && record.direction !== 'note'
        ? existingChannel(app, visitorChannel(organizationId, record.conversation_id)) : undefined
      if (!team?.length && !visitors?.length) return []
      const payload = (await readBack(path === 'organizations' ? undefined : organizationId, record.id)) ?? record
      const channels = team?.length ? [team.send(payload)] : []
      if (visitors?.length) channels.push(visitors.send((await visitorView(app.get('knex'), [payload]))[0]))
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
      const shaped = hook?.relayed ? Promise.resolve(data) : externalRecord(app, path, data, hook, fields)
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
    for (const event of SERVICE_EVENTS) service.publish(event, publisher(event))
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
