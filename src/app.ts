import { feathers } from '@feathersjs/feathers'
import configuration from '@feathersjs/configuration'
import { koa, rest, bodyParser, cors } from '@feathersjs/koa'
import type { Context, Next } from 'koa'
import type { Application, Configuration } from './declarations.js'
import { configurationValidator } from './configuration.js'
import { database } from './db.js'
import { authentication, loadSecret } from './authentication.js'
import { services } from './services/index.js'
import { errorMiddleware, shapeServiceErrors } from './hooks/errors.js'
import { retryReadOnConnectionLoss } from './hooks/connection-loss.js'
import { getBodyQuery } from './hooks/get-body-query.js'
import { rejectNulCharacters } from './hooks/reject-nul.js'
import { JSON_TYPES, requireJsonBodies } from './hooks/json-body.js'
import { oneObjectPerWrite } from './hooks/write-body.js'
import { idempotency, pruneExpiredKeys } from './hooks/idempotency.js'
import { createLogger, redactUrl, requestLogger } from './logger.js'
import { openApi } from './openapi.js'
import { mcpEndpoint } from './mcp/http.js'
import { invitationPage, passwordResetPage, verificationPage } from './link-pages.js'
import { rateLimiting } from './rate-limit/index.js'
import { outbox } from './outbox/index.js'
import { personalData } from './services/crm/privacy/index.js'
import { socketTransport } from './realtime.js'
import { publishRecordEvents } from './realtime-events.js'
import { channelWebhooks } from './services/inbox/channels/index.js'
import { webchatWidget } from './services/inbox/channels/webchat-widget.js'
import { patchToBatchMethod, renderedFormatter, restRequests } from './rest.js'
import { bookingPage } from './services/reservations/booking-page.js'

/** GET /health: 200 once the app is set up and while the database answers, 503 otherwise. */
const health = (app: Application) => (ctx: Context, next: Next) =>
  ctx.path !== '/health' || ctx.method !== 'GET' ? next() : answerHealth(app, ctx)

async function answerHealth(app: Application, ctx: Context) {
  // The port is bound before the services are set up (index.ts): not ready until they are.
  if (!app.get('ready')) {
    ctx.status = 503
    ctx.body = { status: 'starting' }
    return
  }
  try {
    await app.get('knex').raw('select 1')
    ctx.body = { status: 'ok' }
  } catch {
    ctx.status = 503
    ctx.body = { status: 'unavailable' }
  }
}

/**
 * Once shutdown has begun (app.get('draining'), index.ts), every answer closes its connection,
 * those of the requests in flight included: a keep-alive client sends nothing more on it.
 */
const closeConnectionsWhileDraining = (app: Application) => async (ctx: Context, next: Next) => {
  await next()
  if (app.get('draining')) ctx.set('Connection', 'close')
}

/** The client's address (behind a trusted proxy, from X-Forwarded-For) goes to params.clientAddress: the login throttle counts by it. */
const clientAddressInParams = (ctx: Context, next: Next) => {
  ctx.feathers = { ...ctx.feathers, clientAddress: ctx.ip } as typeof ctx.feathers
  return next()
}

/** The JSON text as sent (koa-body's rawBody) goes to params.rawBody: checkAmounts reads numbers as written. */
const rawBodyInParams = (ctx: Context, next: Next) => {
  const raw = (ctx.request as { rawBody?: unknown }).rawBody
  if (typeof raw === 'string' && raw) ctx.feathers = { ...ctx.feathers, rawBody: raw } as typeof ctx.feathers
  return next()
}

/** Builds the application: configuration, Koa middleware, transports (REST and Socket.io), services, app hooks. */
export async function createApp(overrides: Partial<Configuration> = {}): Promise<Application> {
  const app: Application = koa(feathers())
  app.configure(configuration(configurationValidator))
  for (const [key, value] of Object.entries(overrides)) app.set(key as any, value as any)
  // Unset, the public URL and the front end are this service where it listens; the service then
  // serves the invitation acceptance page itself.
  const ownUrl = `http://localhost:${app.get('port') || 3030}`
  const servesInvitationPage = !app.get('appUrl')
  if (!app.get('publicUrl')) app.set('publicUrl', ownUrl)
  if (servesInvitationPage) app.set('appUrl', ownUrl)
  loadSecret(app)
  // Koa then reads ctx.ip from X-Forwarded-For: only safe when a proxy sets that header.
  app.proxy = app.get('trustProxy')

  const logger = overrides.logger ?? createLogger(app.get('logLevel'), app.get('logFormat'))
  app.set('logger', logger)

  app.use(closeConnectionsWhileDraining(app))
  app.use(requestLogger(logger))
  app.use(errorMiddleware(logger))
  // What fails once an answer is streaming (a CSV export's later page) can only cut it short:
  // Koa reports it here, after errorMiddleware has let the request go.
  app.on('error', (error: unknown, ctx?: { method?: string; originalUrl?: string }) =>
    logger.error({ err: error, method: ctx?.method, url: ctx?.originalUrl && redactUrl(ctx.originalUrl) }, 'streamed answer failed'))
  app.use(cors({ exposeHeaders: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id'] }))
  app.use(health(app))
  app.use(webchatWidget(app))
  app.use(bookingPage(app))
  if (servesInvitationPage) {
    app.use(invitationPage(app.get('inviteLinkPath')))
    app.use(verificationPage(app.get('emailVerificationLinkPath')))
    app.use(passwordResetPage(app.get('passwordResetLinkPath')))
  }
  // Before the body parser: provider signatures are checked over the raw bytes.
  app.use(channelWebhooks(app))
  app.use(requireJsonBodies(app))
  app.use(
    bodyParser({
      parsedMethods: ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'],
      jsonTypes: JSON_TYPES,
      jsonLimit: '1mb',
      urlencoded: false,
      text: false,
      includeUnparsed: true
    } as any)
  )
  app.use(rawBodyInParams)
  app.use(clientAddressInParams)
  app.use(restRequests)
  app.use(patchToBatchMethod(app))
  app.use(getBodyQuery())
  openApi(app)
  app.use(idempotency(app))
  app.use(mcpEndpoint(app))

  await database(app)
  app.configure(outbox)
  app.configure(personalData)
  app.configure(pruneExpiredKeys)
  app.configure(rateLimiting)
  // The authentication service named: otherwise every request walks the services to find it.
  app.configure(rest({ formatter: renderedFormatter, authentication: { service: 'authentication' } }))
  app.configure(socketTransport)
  app.configure(authentication)
  app.configure(services)
  app.configure(publishRecordEvents)

  app.hooks({ around: { all: [retryReadOnConnectionLoss] } })
  // The rules every external call meets, whatever its transport (REST, Socket.io, MCP); Koa keeps
  // only what is HTTP (body parsing, GET-body queries, Idempotency-Key, signatures, multipart, CORS).
  app.hooks({ before: { all: [rejectNulCharacters, oneObjectPerWrite] }, error: { all: [shapeServiceErrors] } })
  app.hooks({
    setup: [
      async (_context: any, next: Next) => {
        await next()
        app.set('ready', true)
      }
    ],
    teardown: [
      async (context: any, next: Next) => {
        // The pools close whatever else failed: an embedded database that is not closed loses the
        // values its sequences had cached, and the next start skips them.
        try {
          await next()
        } finally {
          await context.app.get('backgroundKnex').destroy()
          await context.app.get('knex').destroy()
        }
      }
    ]
  })
  return app
}
