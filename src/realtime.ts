import { Forbidden, MethodNotAllowed, NotAuthenticated } from '@feathersjs/errors'
import socketio from '@feathersjs/socketio'
import type { Application, Caller, HookContext } from './declarations.js'
import { accessibleOrganizations } from './hooks/tenant-scope.js'
import { chatClosed, visitorSession } from './services/public-webchat/public-webchat.class.js'
import { SocketCredentials, organizationChannel, visitorChannel } from './realtime-connections.js'
import type { Connection, JwtPayload, SocketCredential } from './realtime-connections.js'

/** The authentication request of a socket: the handshake's auth payload, {apiKey} or {accessToken}. */
function authenticationRequestOf(auth: Record<string, unknown> | undefined) {
  if (typeof auth?.apiKey === 'string') return { strategy: 'api-key', apiKey: auth.apiKey }
  if (typeof auth?.accessToken === 'string') return { strategy: 'jwt', accessToken: auth.accessToken }
  return undefined
}

/**
 * Socket.io next to REST, for events only: a connection authenticates once in its handshake
 * (API key or JWT, like a REST call), joins the channel of each organization it may act in,
 * and receives the record events of those organizations it may read and nothing else
 * (src/realtime-events.ts).
 * Its credentials are checked again while it stays open (SocketCredentials). Service calls go
 * through REST, where the request pipeline (NUL refusal, login throttle, limits) applies.
 * Configured before the services, so that they get the channel mixin.
 */
export const socketTransport = (app: Application) => {
  const credentials = new SocketCredentials(app)
  app.configure(
    socketio({ cors: { origin: '*' } }, (io) => {
      io.use(async (socket, next) => {
        const connection = (socket as any).feathers as Connection
        const visitorToken = socket.handshake.auth?.visitorToken
        if (typeof visitorToken === 'string') {
          const session = await visitorSession(app.get('knex'), visitorToken).catch(() => undefined)
          if (!session) return next(new NotAuthenticated('Invalid visitor token'))
          if (chatClosed(session)) return next(new Forbidden('This chat is closed'))
          connection.visitor = { organization_id: session.organization_id, conversation_id: session.conversation_id }
          connection.credential = { kind: 'visitor', organization_id: session.organization_id, id: session.id }
          return next()
        }
        const presented = authenticationRequestOf(socket.handshake.auth)
        if (!presented) return next(new NotAuthenticated('Invalid API key'))
        try {
          const result = await app.service('authentication').authenticate(presented, {}, 'jwt', 'api-key')
          connection.caller = result.caller
          connection.credential = credentialOf(result.caller, result.authentication.payload)
          next()
        } catch {
          next(new NotAuthenticated('Invalid API key'))
        }
      })
    })
  )
  app.on('connection', (connection: Connection) => {
    credentials.track(connection)
    const { visitor, caller } = connection
    if (visitor) app.channel(visitorChannel(visitor.organization_id, visitor.conversation_id)).join(connection)
    if (!caller) return
    for (const organizationId of accessibleOrganizations(caller)) app.channel(organizationChannel(organizationId)).join(connection)
  })
  app.on('disconnect', (connection: Connection) => credentials.forget(connection))
  credentials.start()
  app.hooks({ before: { all: [refuseSocketCalls] } })
  app.hooks({
    teardown: [
      async (_context: unknown, next: () => Promise<void>) => {
        credentials.stop()
        await next()
      }
    ]
  })
}

/** What an authenticated socket is checked against again: its API key, or its JWT's account and issue time. */
const credentialOf = (caller: Caller, payload: JwtPayload | undefined): SocketCredential =>
  caller.apiKeyId !== undefined
    ? { kind: 'api-key', organization_id: caller.apiKeyOrganizationId!, id: caller.apiKeyId }
    : { kind: 'jwt', userId: caller.userId, payload: payload ?? {} }

const refuseSocketCalls = async (context: HookContext) => {
  if (context.params.provider === 'socketio') {
    throw new MethodNotAllowed('Socket connections receive events only: call the REST API')
  }
}
