import { BadRequest, Forbidden, MethodNotAllowed, NotAuthenticated } from '@feathersjs/errors'
import feathersCore from '@feathersjs/feathers'
import type { AuthenticationResult } from '@feathersjs/authentication'
import socketio from '@feathersjs/socketio'
import type { Application, Caller, HookContext, NextFunction } from './declarations.js'
import { accessibleOrganizations } from './hooks/tenant-scope.js'
import { seenNow, sessionRefusal, visitorSession } from './services/inbox/public-webchat/public-webchat.class.js'
import { SWEEP_INTERVAL_MS, SocketCredentials, organizationChannel, visitorChannel } from './realtime-connections.js'
import { runInBackground } from './background.js'
import type { Connection, JwtPayload, SocketCredential } from './realtime-connections.js'

/** The authentication request of a socket: the handshake's auth payload, {apiKey} or {accessToken}. */
function authenticationRequestOf(auth: Record<string, unknown> | undefined) {
  if (typeof auth?.apiKey === 'string') return { strategy: 'api-key', apiKey: auth.apiKey }
  if (typeof auth?.accessToken === 'string') return { strategy: 'jwt', accessToken: auth.accessToken }
  return undefined
}

/** Whether the handshake brings credentials at all (of whatever type): a wrong one is refused, none connects anonymously. */
const presentsCredentials = (auth: Record<string, unknown> | undefined) => auth?.apiKey !== undefined || auth?.accessToken !== undefined

/**
 * How many credentials a handshake brings: staff ones in its headers (Feathers' socketio
 * middleware has signed the connection in from them before our middleware runs: it is then
 * authenticated), staff ones in its auth payload, a visitor token.
 */
const credentialsPresented = (connection: Connection, auth: Record<string, unknown> | undefined) =>
  [connection.authentication !== undefined, presentsCredentials(auth), auth?.visitorToken !== undefined].filter(Boolean).length

/** The client's address as REST would see it (ctx.ip): behind a trusted proxy, the first X-Forwarded-For entry. */
function clientAddressOf(app: Application, handshake: { address: string; headers: Record<string, string | string[] | undefined> }) {
  const forwarded = handshake.headers['x-forwarded-for']
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim()
  return app.get('trustProxy') && first ? first : handshake.address
}

/**
 * Socket.io next to REST, with the same services, hooks and answers: a call over a socket goes
 * through the one hook pipeline REST calls go through (authentication, NUL refusal, rate limit,
 * tenant scope, validation), and its errors are the spec's error objects. A socket signs in either
 * in its handshake (auth: {apiKey} or {accessToken}) or afterwards the Feathers way (`create` on
 * authentication, see socketSessions); it then joins the channel of each organization it may act
 * in and receives the record events published there (src/realtime-events.ts). Its credentials are presented again with every call
 * (connection.authentication, checked by the authentication hook), so a revoked one is refused on
 * the next call; the channels follow within SocketCredentials' sweep. Configured before the
 * services, so that they get the channel mixin.
 */
export const socketTransport = (app: Application) => {
  const credentials = new SocketCredentials(app)
  app.configure(
    socketio({ cors: { origin: '*' } }, (io) => {
      io.use(async (socket, next) => {
        const connection = (socket as any).feathers as Connection
        connection.clientAddress = clientAddressOf(app, socket.handshake)
        const { auth } = socket.handshake
        // Refused, the connection leaves whatever its headers' sign-in joined (Feathers' own ending).
        const refuse = (error: Error) => {
          app.emit('disconnect', connection)
          next(error)
        }
        if (credentialsPresented(connection, auth) > 1) {
          return refuse(new BadRequest('A connection is one identity: present one credential (an API key, an access token or a visitor token), in the headers or in auth, not several'))
        }
        const visitorToken = auth?.visitorToken
        if (visitorToken !== undefined) {
          const session = await visitorSession(app, typeof visitorToken === 'string' ? visitorToken : undefined).catch(() => undefined)
          if (!session) return next(new NotAuthenticated('Invalid visitor token'))
          const refusal = sessionRefusal(session)
          if (refusal) return next(refusal)
          // A last_seen_at not written only brings the session's expiry closer: the socket still connects.
          await seenNow(app, session).catch(() => undefined)
          connection.visitor = { organization_id: session.organization_id, conversation_id: session.conversation_id }
          connection.credentials = [{ kind: 'visitor', organization_id: session.organization_id, id: session.id }]
          return next()
        }
        const presented = authenticationRequestOf(auth)
        if (!presented) return presentsCredentials(auth) ? next(new NotAuthenticated('Invalid API key')) : next()
        try {
          const result = await app.service('authentication').authenticate(presented, {}, 'jwt', 'api-key')
          connection.authentication = presented
          connection.caller = result.caller
          connection.credentials = [credentialOf(result.caller, result.authentication.payload)]
          next()
        } catch {
          next(new NotAuthenticated('Invalid API key'))
        }
      })
    })
  )
  const joinChannels = (connection: Connection) => {
    if (!connection.caller) return
    for (const organizationId of accessibleOrganizations(connection.caller)) app.channel(organizationChannel(organizationId)).join(connection)
  }
  app.on('connection', (connection: Connection) => {
    credentials.track(connection)
    const { visitor } = connection
    if (visitor) app.channel(visitorChannel(visitor.organization_id, visitor.conversation_id)).join(connection)
    joinChannels(connection)
  })
  app.on('disconnect', (connection: Connection) => credentials.forget(connection))
  app.on('logout', (_result: unknown, params: { connection?: Connection } | undefined) => {
    if (params?.connection) credentials.loggedOut(params.connection)
  })
  runInBackground(app, {
    name: 'realtime: checking the credentials of open sockets',
    intervalMs: SWEEP_INTERVAL_MS,
    pass: () => credentials.sweep()
  })
  app.hooks({ before: { all: [refuseSocketCallsToHttpRoutes] } })
  app.hooks({ around: { create: [socketSessions(app, credentials, joinChannels)], remove: [socketSessions(app, credentials, joinChannels)] } })
}

/**
 * App-level around hook, for the authentication service's create and remove on a socket
 * (params.connection), after Feathers' own connection handling: a login (any strategy) makes the
 * connection that session's. It leaves the channels of any earlier session, presents the new
 * credentials with each later call (a JWT as Feathers keeps it; an API key kept here, since no
 * token is issued for it), joins the channels of the organizations the caller may act in, and is
 * checked by SocketCredentials from then on. A logout of the connection's own session (Feathers
 * has then dropped its credentials, so the next call is a 401) leaves every channel. A web-chat
 * visitor's connection may not sign in at all: a connection is one identity.
 */
const socketSessions = (app: Application, credentials: SocketCredentials, joinChannels: (connection: Connection) => void) =>
  async (context: HookContext, next: NextFunction) => {
    const connection = context.params.connection as Connection | undefined
    if (context.path === 'authentication' && context.method === 'create' && connection?.visitor) {
      throw new Forbidden('A web-chat visitor connection cannot sign in: open a new connection to sign in as staff')
    }
    await next()
    if (context.path !== 'authentication' || !connection || connection.visitor) return
    if (context.method === 'remove') {
      if (!connection.authentication) leaveSession(app, credentials, connection)
      return
    }
    const result = context.result as AuthenticationResult
    const session: AuthenticationResult = result.caller
      ? result
      : await app.service('authentication').authenticate({ strategy: 'jwt', accessToken: result.accessToken }, {}, 'jwt')
    leaveSession(app, credentials, connection)
    connection.authentication = result.accessToken
      ? { strategy: 'jwt', accessToken: result.accessToken }
      : { strategy: 'api-key', apiKey: (context.data as { apiKey: string }).apiKey }
    connection.caller = session.caller
    connection.credentials = [credentialOf(session.caller, session.authentication?.payload)]
    credentials.track(connection)
    joinChannels(connection)
  }

function leaveSession(app: Application, credentials: SocketCredentials, connection: Connection) {
  for (const channel of app.channels) app.channel(channel).leave(connection)
  credentials.forget(connection)
  delete connection.caller
  delete connection.credentials
}

/** What an authenticated socket is checked against again: its API key, or its JWT's account and issue time. */
const credentialOf = (caller: Caller, payload: JwtPayload | undefined): SocketCredential =>
  caller.apiKeyId !== undefined
    ? { kind: 'api-key', organization_id: caller.apiKeyOrganizationId!, id: caller.apiKeyId }
    : { kind: 'jwt', userId: caller.userId, payload: payload ?? {} }

/** Services whose calls are HTTP by nature (the public booking and web-chat routes, declared restOnly) refuse socket calls. */
const refuseSocketCallsToHttpRoutes = async (context: HookContext) => {
  if (context.params.provider === 'socketio' && (feathersCore.getServiceOptions(context.self) as { restOnly?: boolean } | undefined)?.restOnly) {
    throw new MethodNotAllowed(`${context.path} is an HTTP route: call it over REST`)
  }
}
