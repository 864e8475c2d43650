import crypto from 'node:crypto'
import { pino } from 'pino'
import type { DestinationStream, Logger } from 'pino'
import type { Context, Next } from 'koa'

export const createLogger = (level: string, destination?: DestinationStream): Logger =>
  destination ? pino({ level, base: undefined }, destination) : pino({ level, base: undefined })

/** Query parameters whose values are credentials (compared case-insensitively, qs brackets ignored). */
export const SECRET_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'token', 'key', 'api_key', 'apikey', 'access_token', 'refresh_token', 'password', 'secret', 'signature',
  'x-amz-signature', 'x-amz-credential', 'x-amz-security-token'
])

/** Paths whose segment after the prefix is a credential: the public manage token of a reservation. */
export const SECRET_PATH_SEGMENTS: readonly RegExp[] = [/^(\/+public\/+reservations\/+)[^/]+/i]

const REDACTED = '[REDACTED]'

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}

/**
 * A URL as it may be written to the log: the values of secret query parameters and secret path
 * segments replaced by [REDACTED]. Every log line that carries a URL goes through this.
 */
export function redactUrl(url: string): string {
  const mark = url.indexOf('?')
  let path = mark === -1 ? url : url.slice(0, mark)
  for (const pattern of SECRET_PATH_SEGMENTS) path = path.replace(pattern, `$1${REDACTED}`)
  if (mark === -1) return path
  const parameters = url.slice(mark + 1).split('&').map((part) => {
    const equals = part.indexOf('=')
    const rawName = equals === -1 ? part : part.slice(0, equals)
    const name = safeDecode(rawName).replace(/\[.*$/, '').trim().toLowerCase()
    return SECRET_QUERY_PARAMETERS.has(name) ? `${rawName}=${REDACTED}` : part
  })
  return `${path}?${parameters.join('&')}`
}

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
        url: redactUrl(ctx.originalUrl),
        status: ctx.status,
        ms: Number(process.hrtime.bigint() - started) / 1e6
      }, 'request')
    }
  }
}
