import { MethodNotAllowed, NotAuthenticated } from '@feathersjs/errors'
import socketio from '@feathersjs/socketio'
import { createRequire } from 'node:module'
import { pubSubConnections } from './redis-pubsub.js'
import type { Application, Caller, HookContext } from './declarations.js'
import { accessibleOrganizations } from './hooks/tenant-scope.js'
import { visitorSession, visitorView } from './services/public-webchat/public-webchat.class.js'

/** The services whose created, patched and removed events dashboards receive. */
export const PUBLISHED_SERVICES = [
  'conversations',
  'conversation-messages-whatsapp',
  'conversation-messages-instagram',
  'conversation-messages-messenger',
  'conversation-messages-webchat',
  'conversation-messages-sms',
  'conversation-messages-playground',
  'conversation-predefined-messages',
  'conversation-files'
] as const

export const organizationChannel = (organizationId: number) => `organizations/${organizationId}`
/** A web-chat visitor's connections: the messages of their own conversation, notes excepted. */
export const visitorChannel = (organizationId: number, conversationId: number) => `webchat-visitors/${organizationId}/${conversationId}`

/** The conversation a web-chat visitor's socket follows, from auth.visitorToken. */
interface Visitor {
  organization_id: number
  conversation_id: number
}

/** The credentials of a socket: the handshake's auth payload, {apiKey} or {accessToken}. */
function credentialsOf(auth: Record<string, unknown> | undefined) {
  if (typeof auth?.apiKey === 'string') return { strategy: 'api-key', apiKey: auth.apiKey }
  if (typeof auth?.accessToken === 'string') return { strategy: 'jwt', accessToken: auth.accessToken }
  return undefined
}

/**
 * Socket.io next to REST, for events only: a connection authenticates once in its handshake
 * (API key or JWT, like a REST call), joins the channel of each organization it may act in,
 * and receives the inbox's events of those organizations and nothing else (publishInboxEvents).
 * Service calls go through REST, where the request pipeline (NUL refusal, login throttle,
 * limits) applies. Configured before the services, so that they get the channel mixin.
 */
export const socketTransport = (app: Application) => {
  app.configure(
    socketio({ cors: { origin: '*' } }, (io) => {
      io.use(async (socket, next) => {
        const visitorToken = socket.handshake.auth?.visitorToken
        if (typeof visitorToken === 'string') {
          const session = await visitorSession(app.get('knex'), visitorToken).catch(() => undefined)
          if (!session) return next(new NotAuthenticated('Invalid visitor token'))
          ;(socket as any).feathers.visitor = { organization_id: session.organization_id, conversation_id: session.conversation_id } satisfies Visitor
          return next()
        }
        const credentials = credentialsOf(socket.handshake.auth)
        if (!credentials) return next(new NotAuthenticated('Invalid API key'))
        try {
          const { caller } = await app.service('authentication').authenticate(credentials, {}, 'jwt', 'api-key')
          ;(socket as any).feathers.caller = caller
          next()
        } catch {
          next(new NotAuthenticated('Invalid API key'))
        }
      })
    })
  )
  app.on('connection', (connection: any) => {
    const visitor = connection.visitor as Visitor | undefined
    if (visitor) app.channel(visitorChannel(visitor.organization_id, visitor.conversation_id)).join(connection)
    const caller = connection.caller as Caller | undefined
    if (!caller) return
    for (const organizationId of accessibleOrganizations(caller)) app.channel(organizationChannel(organizationId)).join(connection)
  })
  app.hooks({ before: { all: [refuseSocketCalls] } })
}

/**
 * Every inbox event goes to the channel of the record's organization; no other event is
 * published. A web-chat message that is not a note also goes to its conversation's visitor,
 * in the visitor's view (no internal fields).
 */
export const publishInboxEvents = (app: Application) => {
  const toTeam = (data: { organization_id: number }) => app.channel(organizationChannel(data.organization_id))
  const toTeamAndVisitor = async (data: { organization_id: number; conversation_id: number; direction: string }) => {
    if (data.direction === 'note') return toTeam(data)
    const [view] = await visitorView(app.get('knex'), [data])
    return [toTeam(data), app.channel(visitorChannel(data.organization_id, data.conversation_id)).send(view)]
  }
  for (const path of PUBLISHED_SERVICES) {
    // One publisher per service of the list; their union type has no common publish signature.
    ;(app.service(path) as any).publish(path === 'conversation-messages-webchat' ? toTeamAndVisitor : toTeam)
  }
}

/**
 * feathers-sync's core: every service registered afterwards sends its events out ('sync-out') and
 * emits what comes in ('sync-in'). Loaded only with REDIS_URL set (it brings its own Redis and
 * AMQP adapters, ~25 MB of resident memory for nothing otherwise).
 */
const syncCore = () => (createRequire(import.meta.url)('feathers-sync') as { core: (app: Application) => void }).core

/**
 * With REDIS_URL set, the events of the services registered after this point reach the
 * connections of every instance: feathers-sync's core routes each event out, it goes through
 * Redis pub/sub on EVENTS_CHANNEL, and every instance (this one included) emits it to its own
 * sockets. Only the path, the event name and the record travel; the hook context (with its
 * transaction and caller) stays in the process. While Redis is unreachable an event is emitted
 * here directly, so this instance's sockets still hear it; Redis never holds up start-up or a
 * request (the same connection rules as the API-key invalidation).
 */
export const syncEventsAcrossInstances = (app: Application) => {
  const url = app.get('redisUrl')
  if (!url) return
  const channel = app.get('eventsChannel')
  const { publisher, subscriber } = pubSubConnections(url)

  app.configure(syncCore())
  const ready = subscriber.connect().then(() => subscriber.subscribe(channel))
  ready.catch(() => undefined)
  publisher.connect().catch(() => undefined)
  ;(app as any).sync = {
    serialize: ({ event, path, data }: { event: string; path: string; data: unknown }) => JSON.stringify({ event, path, data }),
    deserialize: (raw: string) => JSON.parse(raw),
    ready
  }
  const emitHere = (raw: string) => app.emit('sync-in', raw)
  app.on('sync-out', (raw: string) => {
    if (publisher.status !== 'ready' || subscriber.status !== 'ready') return emitHere(raw)
    publisher.publish(channel, raw).catch(() => emitHere(raw))
  })
  subscriber.on('message', (_channel: string, raw: string) => emitHere(raw))
  app.hooks({
    teardown: [
      async (_context: unknown, next: () => Promise<void>) => {
        publisher.disconnect()
        subscriber.disconnect()
        await next()
      }
    ]
  })
}

const refuseSocketCalls = async (context: HookContext) => {
  if (context.params.provider === 'socketio') {
    throw new MethodNotAllowed('Socket connections receive events only: call the REST API')
  }
}
