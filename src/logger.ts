import { AsyncLocalStorage } from 'node:async_hooks'
import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { pino } from 'pino'
import type { DestinationStream, Logger } from 'pino'
import type { Context, Next } from 'koa'

/** The request being served, if any: every log line written while serving it carries its req_id. */
const requestContext = new AsyncLocalStorage<{ req_id: string }>()

/** pino-pretty for humans (LOG_FORMAT=pretty), loaded only then; ISO 8601 UTC times. */
const prettyStream = (): DestinationStream => {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream
  return pretty({ translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'", ignore: 'pid,hostname' })
}

/** JSON lines by default; `format` 'pretty' for a terminal. */
export const createLogger = (level: string, format = 'json', destination?: DestinationStream): Logger =>
  pino(
    { level, base: undefined, mixin: () => requestContext.getStore() ?? {} },
    destination ?? (format === 'pretty' ? prettyStream() : undefined)
  )

/** One JSON line per request, tagged with a request id (taken from X-Request-Id or generated). */
export const requestLogger = (logger: Logger) => async (ctx: Context, next: Next) => {
  const started = process.hrtime.bigint()
  const incoming = ctx.get('x-request-id')
  const id = /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID()
  ctx.state.requestId = id
  ctx.set('X-Request-Id', id)
  await requestContext.run({ req_id: id }, async () => {
    try {
      await next()
    } finally {
      if (logger.isLevelEnabled('info')) {
        logger.info({
          method: ctx.method,
          url: ctx.originalUrl,
          status: ctx.status,
          ms: Number(process.hrtime.bigint() - started) / 1e6
        }, 'request')
      }
    }
  })
}
