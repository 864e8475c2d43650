import crypto from 'node:crypto'
import { pino } from 'pino'
import type { Logger } from 'pino'
import type { Context, Next } from 'koa'

export const createLogger = (level: string): Logger => pino({ level, base: undefined })

/** One JSON line per request, tagged with a request id (taken from X-Request-Id or generated). */
export const requestLogger = (logger: Logger) => async (ctx: Context, next: Next) => {
  const started = process.hrtime.bigint()
  const incoming = ctx.get('x-request-id')
  const id = /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID()
  ctx.state.requestId = id
  ctx.set('X-Request-Id', id)
  try {
    await next()
  } finally {
    if (logger.isLevelEnabled('info')) {
      logger.info({
        req_id: id,
        method: ctx.method,
        url: ctx.originalUrl,
        status: ctx.status,
        ms: Number(process.hrtime.bigint() - started) / 1e6
      }, 'request')
    }
  }
}
