import { BadRequest, Conflict, FeathersError, GeneralError, MethodNotAllowed, NotFound, Unavailable } from '@feathersjs/errors'
import { ERROR as KNEX_ORIGINAL_ERROR } from '@feathersjs/knex'
import type { Context, Next } from 'koa'
import type { Logger } from 'pino'
import type { HookContext } from '../declarations.js'
import { isConnectionLoss, isShardMoved } from '../db-connections.js'
import { redactUrl } from '../logger.js'
import { invalidJsonMessage } from './json-body.js'
import { fieldErrors, isAjvErrorList } from './validation-messages.js'

/** A 400 in the spec's validation shape for one field: {errors: {field: message}}. */
export const fieldError = (field: string, message: string) => new BadRequest('Validation failed', { errors: { [field]: message } })

// 'Key (organization_id, lower(name))=(3, demo) already exists.': the column list may hold expressions.
const PG_FIELD_FROM_DETAIL = /\((.+?)\)=\(/

/** Postgres errors become client errors with no SQL; anything unknown stays a server error. */
export function translateDatabaseError(error: any): FeathersError | undefined {
  const original = error?.[KNEX_ORIGINAL_ERROR] ?? error
  const code: unknown = original?.code
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined
  const detailField = PG_FIELD_FROM_DETAIL.exec(original.detail ?? '')?.[1]
  const field = original.column ?? detailField?.split(',').pop()?.trim().replace(/^lower\((.*)\)$/, '$1').replace(/^"(.*)"$/, '$1')
  switch (code) {
    case '23505':
      return new Conflict('A record with this value already exists', field ? { errors: { [field]: 'is already taken' } } : {})
    case '23503':
      return new BadRequest('A referenced record does not exist in this organization', field ? { errors: { [field]: 'does not exist in this organization' } } : {})
    case '23502':
      return new BadRequest('A required value is missing', field ? { errors: { [field]: 'is required' } } : {})
    case '23514':
    case '23P01':
      return new BadRequest('A value breaks a rule of this resource', field ? { errors: { [field]: 'is invalid' } } : {})
    case '22001':
    case '22003':
    case '22007':
    case '22008':
    case '22P02':
    case '22023':
      return new BadRequest('A value is out of range or malformed')
    case '22021':
    case '22P05':
    case '22P06':
      // Text Postgres cannot store (a NUL character, an untranslatable character); rejectNulCharacters catches most first.
      return new BadRequest('A text value contains a character that cannot be stored')
    case '40001':
    case '40P01':
      return new Conflict('The request conflicted with a concurrent change; retry it')
    case '57014':
      return new Unavailable('The request took too long')
    default:
      return undefined
  }
}

/**
 * A server error the client sees as a bare 500/503. The real error rides along as `cause`
 * (not enumerable, never serialised to the client), so the one log line of the request
 * carries it with its stack, and so does a worker that logs a failed internal call.
 */
const SANITIZED = Symbol('sanitized server error')

function sanitized(shaped: FeathersError, original: unknown): FeathersError {
  Object.defineProperty(shaped, 'cause', { value: originalErrorOf(original), enumerable: false, configurable: true })
  Object.defineProperty(shaped, SANITIZED, { value: true, enumerable: false })
  return shaped
}

/**
 * A server error whose message is written for the caller (which outside service failed and what
 * to check, never a stack or a raw error): it is sent as it is, where any other 5xx is answered
 * with a bare "Internal server error" or "Service unavailable".
 */
export function explainedServerError(error: FeathersError): FeathersError {
  Object.defineProperty(error, SANITIZED, { value: true, enumerable: false })
  return error
}

const serverError = (original: unknown, code = 500) =>
  sanitized(code === 503 ? new Unavailable('Service unavailable') : new GeneralError('Internal server error'), original)

/** Seconds a client waits before sending again a request whose database connection was lost. */
const CONNECTION_LOSS_RETRY_AFTER_S = 1

/**
 * A request whose connection was lost (a database failover, a restart, an idle-session timeout):
 * 503 with Retry-After. The next connection is a fresh one; a read has already been tried again.
 */
const connectionLost = (original: unknown) =>
  sanitized(new Unavailable('The service lost a connection it needed; send the request again', { retryAfter: CONNECTION_LOSS_RETRY_AFTER_S }), original)

/**
 * A request that met its organization's shard as Citus replaced it (a tenant isolated, shards
 * rebalanced): 503 with Retry-After. A read has already been tried again; a write did not
 * happen, or, when it had committed before a later statement failed, a retry with the same
 * Idempotency-Key answers it.
 */
const shardMoved = (original: unknown) =>
  sanitized(new Unavailable("The organization's data was moving between database nodes; send the request again", { retryAfter: CONNECTION_LOSS_RETRY_AFTER_S }), original)

/** The error to log for a server error: the original behind a sanitised one, else the error itself. */
export function originalErrorOf(error: any): unknown {
  return error?.[SANITIZED] && error.cause !== undefined ? error.cause : error
}

/**
 * Feathers resolvers collect each property's error as {name: error.toJSON() | {message}} under
 * 'Error resolving data'. Client errors keep their message per field; anything else (a database
 * error, a bug) is a server error whose text never reaches the client.
 */
function shapeResolverError(error: FeathersError): FeathersError {
  const errors: Record<string, string> = {}
  for (const [field, inner] of Object.entries((error.data ?? {}) as Record<string, any>)) {
    const code = Number(inner?.code)
    if (!(code >= 400 && code < 500)) return serverError(error)
    errors[field] = String(inner.message ?? 'is invalid')
  }
  return new BadRequest('Validation failed', { errors })
}

/**
 * Turns any error into the spec's shape {name, message, code, className, errors?, data?}:
 * validation lists become field maps, database errors lose their SQL, unknown errors lose
 * everything but a generic message (the original stays reachable through originalErrorOf).
 * Logging is not done here: errorMiddleware writes one line per failed request.
 */
export function shapeError(error: any): FeathersError {
  if (!error?.[SANITIZED] && isConnectionLoss(error)) return connectionLost(error)
  if (!error?.[SANITIZED] && isShardMoved(error)) return shardMoved(error)
  if (error instanceof FeathersError) {
    if (error.code === 400 && error.message.startsWith('Error resolving data') && error.data && typeof error.data === 'object') {
      return shapeResolverError(error)
    }
    if (error.code === 400 && isAjvErrorList(error.data)) {
      return new BadRequest('Validation failed', { errors: fieldErrors(error.data) })
    }
    if (error.code === 400 && isAjvErrorList(error.errors)) {
      return new BadRequest('Validation failed', { errors: fieldErrors(error.errors) })
    }
    const translated = translateDatabaseError(error)
    if (translated) return translated
    if (error.code >= 500) return (error as any)[SANITIZED] ? error : serverError(error, error.code === 503 ? 503 : 500)
    return error
  }
  const translated = translateDatabaseError(error)
  if (translated) return translated
  return serverError(error)
}

/**
 * App-level error hook: every service error leaves in the spec's shape. Over Socket.io the error
 * object is the answer itself: it serialises to the body REST sends (errorBody), and a server
 * error is logged here, once per call, as errorMiddleware logs it for REST.
 */
export const shapeServiceErrors = async (context: HookContext) => {
  const error = shapeError(context.error)
  if (context.params.provider === 'socketio') {
    const body = errorBody(error)
    Object.defineProperty(error, 'toJSON', { value: () => body, configurable: true })
    if (error.code >= 500 && !loggedForSocket.has(error)) {
      loggedForSocket.add(error)
      context.app.get('logger')?.error({ err: originalErrorOf(error), path: context.path, method: context.method }, 'socket call failed')
    }
  }
  context.error = error
}

const loggedForSocket = new WeakSet<object>()

/** The spec's error body of an error: {name, message, code, className, errors?, data?}. */
export const errorBody = (error: FeathersError) => {
  const { name, message, code, className, errors, data } = error.toJSON() as any
  const body: Record<string, unknown> = { name, message, code, className }
  if (errors && Object.keys(errors).length) body.errors = errors
  if (data !== undefined && !(data && typeof data === 'object' && Object.keys(data).length === 0)) body.data = data
  return body
}

// The JSON parser (co-body, with bourne) refuses __proto__ and constructor.prototype keys outright.
const isPrototypeKeyRefusal = (error: any) => error instanceof SyntaxError && /forbidden prototype property/.test(error.message)
// co-body's refusal of a body that is not JSON: the parser's SyntaxError, with the text it read.
const isJsonSyntaxError = (error: any) => error instanceof SyntaxError && typeof (error as any).body === 'string'
const PROTOTYPE_KEY_REFUSED = 'Invalid request body: a "__proto__" or "constructor.prototype" key is not allowed'

/**
 * Koa error middleware: covers what never reaches a service (bad JSON, unknown routes,
 * body too large) and guarantees that no stack, SQL or internal detail is ever sent.
 * Every server error is logged here, once per request, with the original error and req_id.
 */
export const errorMiddleware = (logger?: Logger) => async (ctx: Context, next: Next) => {
  try {
    await next()
    if (ctx.body === undefined && ctx.status === 404) {
      throw new NotFound(`Path ${ctx.path} not found`)
    }
  } catch (raw: any) {
    let error: FeathersError
    if (!(raw instanceof FeathersError) && typeof raw?.status === 'number' && raw.status >= 400 && raw.status < 500) {
      // http-errors thrown by koa-body and friends: malformed JSON, payload too large, ...
      error = raw.status === 413
        ? new FeathersError('Request body is too large', 'PayloadTooLarge', 413, 'payload-too-large', {})
        : new BadRequest(raw.expose ? `Invalid request body: ${raw.message}` : isPrototypeKeyRefusal(raw) ? PROTOTYPE_KEY_REFUSED : isJsonSyntaxError(raw) ? invalidJsonMessage(raw.body) : 'Invalid request body')
    } else {
      error = shapeError(raw)
    }
    if (error.code === 405 && ctx.method === 'PUT') error = putRefused()
    if (error.code >= 500) {
      logger?.error({ err: originalErrorOf(error), req_id: ctx.state.requestId, method: ctx.method, url: redactUrl(ctx.originalUrl) }, 'request failed')
    }
    ctx.status = error.code
    ctx.set(rateLimitHeadersOf(ctx, error))
    ctx.body = errorBody(error)
  }
}

/** No resource replaces a record whole (Feathers' `update`): the refusal of a PUT names the method that changes one. */
const putRefused = () => new MethodNotAllowed('PUT is not supported: use PATCH for partial updates')

/**
 * A failed request keeps the RateLimit headers its hooks set (context.http.headers), and a 429
 * or a 503 that knows it tells the client when to come back.
 */
function rateLimitHeadersOf(ctx: Context, error: FeathersError): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(ctx.hook?.http?.headers ?? {})) {
    if (/^(ratelimit|retry-after)/i.test(name)) headers[name] = String(value)
  }
  const retryAfter = error.code === 429 || error.code === 503 ? error.data?.retryAfter : undefined
  if (typeof retryAfter === 'number') headers['Retry-After'] = String(retryAfter)
  return headers
}
