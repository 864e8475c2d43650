import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { pino } from 'pino'
import type { DestinationStream, Logger } from 'pino'
import type { Context, Next } from 'koa'

/** pino-pretty for humans (LOG_FORMAT=pretty), loaded only then; ISO 8601 UTC times. */
const prettyStream = (): DestinationStream => {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream
  return pretty({ translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'", ignore: 'pid,hostname' })
}

/** Whether lines are for a person: 'pretty', or 'auto' when stdout is a terminal (a log collector gets JSON). */
const readable = (format: string) => format === 'pretty' || (format === 'auto' && Boolean(process.stdout.isTTY))

/** JSON lines, or readable lines (LOG_FORMAT, or on a terminal by default). */
export const createLogger = (level: string, format = 'json', destination?: DestinationStream): Logger =>
  pino(
    { level, base: undefined },
    destination ?? (readable(format) ? prettyStream() : undefined)
  )

/** Query parameters whose values are credentials (compared case-insensitively, qs brackets ignored). */
export const SECRET_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'token', 'key', 'api_key', 'apikey', 'access_token', 'refresh_token', 'password', 'secret', 'signature',
  'x-amz-signature', 'x-amz-credential', 'x-amz-security-token', 'hub.verify_token'
])

/**
 * Query parameters whose values are a person's data (a filter or search by name, e-mail or phone):
 * the request log is kept by the operator, outside the erasure's reach (docs/privacy.md).
 */
export const PERSONAL_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'first_name', 'last_name', 'full_name', 'email', 'phone', 'phone_e164', 'searchterm', 'search', 'q', 'external_id',
  'channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_messenger_user_id', 'channel_instagram_user_id', 'content'
])

/** Paths whose segment after the prefix is a credential: a reservation's manage token, a channel account's webhook key, a widget token. */
export const SECRET_PATH_SEGMENTS: readonly RegExp[] = [
  /^(\/+public\/+reservations\/+)[^/]+/i,
  /^(\/+webhooks\/+[a-z]+\/+)[^/]+/i,
  /^(\/+public\/+webchat\/+)(?!messages(?:\/|$))[^/]+/i
]

const REDACTED = '[REDACTED]'

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}

/**
 * A URL as it may be written to the log: the values of secret query parameters, of parameters
 * carrying a person's data, and of secret path segments replaced by [REDACTED]. Every log line
 * that carries a URL goes through this.
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
    return SECRET_QUERY_PARAMETERS.has(name) || PERSONAL_QUERY_PARAMETERS.has(name) ? `${rawName}=${REDACTED}` : part
  })
  return `${path}?${parameters.join('&')}`
}

/**
 * The logger for lines written on behalf of a request: each carries the request's req_id
 * (params.requestId in a service call, ctx.state.requestId in Koa). Outside a request, the logger
 * itself. The id is passed explicitly rather than found through AsyncLocalStorage, whose promise
 * hooks would cost every promise of every request.
 */
export const requestLog = (logger: Logger, requestId: string | undefined): Logger =>
  requestId ? logger.child({ req_id: requestId }) : logger

/**
 * One JSON line per request, tagged with a request id (taken from X-Request-Id or generated),
 * which the request's service calls get as params.requestId.
 */
export const requestLogger = (logger: Logger) => async (ctx: Context, next: Next) => {
  const started = process.hrtime.bigint()
  const incoming = ctx.get('x-request-id')
  const id = /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID()
  ctx.state.requestId = id
  if (ctx.feathers) ctx.feathers.requestId = id
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
