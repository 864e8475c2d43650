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
import { getBodyQuery } from './hooks/get-body-query.js'
import { rejectNulCharacters } from './hooks/reject-nul.js'
import { createLogger, requestLogger } from './logger.js'
import { openApi } from './openapi.js'
import { rateLimiting } from './rate-limit/index.js'
import { publishInboxEvents, socketTransport } from './realtime.js'

/** GET /health: 200 while the database answers, 503 otherwise. */
const health = (app: Application) => async (ctx: Context, next: Next) => {
  if (ctx.path !== '/health' || ctx.method !== 'GET') return next()
  try {
    await app.get('knex').raw('select 1')
    ctx.body = { status: 'ok' }
  } catch {
    ctx.status = 503
    ctx.body = { status: 'unavailable' }
  }
}

/** Builds the application: configuration, Koa middleware, transports (REST, and Socket.io for events), services, app hooks. */
export async function createApp(overrides: Partial<Configuration> = {}): Promise<Application> {
  const app: Application = koa(feathers())
  app.configure(configuration(configurationValidator))
  for (const [key, value] of Object.entries(overrides)) app.set(key as any, value as any)
  loadSecret(app)
  // Koa then reads ctx.ip from X-Forwarded-For: only safe when a proxy sets that header.
  app.proxy = app.get('trustProxy')

  const logger = overrides.logger ?? createLogger(app.get('logLevel'))
  app.set('logger', logger)

  app.use(requestLogger(logger))
  app.use(errorMiddleware(logger))
  app.use(cors({ exposeHeaders: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id'] }))
  app.use(health(app))
  app.use(
    bodyParser({
      parsedMethods: ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'],
      jsonLimit: '1mb',
      urlencoded: false,
      text: false
    } as any)
  )
  app.use(getBodyQuery())
  app.use(rejectNulCharacters())
  openApi(app)

  await database(app)
  app.configure(rateLimiting)
  app.configure(rest())
  app.configure(socketTransport)
  app.configure(authentication)
  app.configure(services)
  app.configure(publishInboxEvents)

  app.hooks({ error: { all: [shapeServiceErrors] } })
  app.hooks({
    teardown: [
      async (context: any, next: Next) => {
        await next()
        await context.app.get('knex').destroy()
      }
    ]
  })
  return app
}
