import { BadRequest, Conflict, FeathersError, GeneralError, MethodNotAllowed, NotFound, Unavailable } from '@feathersjs/errors'
import { ERROR as KNEX_ORIGINAL_ERROR } from '@feathersjs/knex'
import type { Context, Next } from 'koa'
import type { Logger } from 'pino'
import type { HookContext } from '../declarations.js'
import { isConnectionLoss } from '../db-connections.js'
import { redactUrl } from '../logger.js'
import { invalidJsonMessage } from './json-body.js'
import { MONEY_PATTERN, PERCENTAGE_PATTERN, QUANTITY_PATTERN } from '../schemas.js'

interface AjvError {
  instancePath?: string
  keyword?: string
  message?: string
  params?: Record<string, any>
}

const isAjvErrorList = (value: unknown): value is AjvError[] =>
  Array.isArray(value) && value.every((e) => e && typeof e === 'object' && 'keyword' in e)

// Validation messages in the user's words: never a regular expression or a JSON-Schema term.
const FORMAT_MESSAGES: Record<string, string> = {
  email: 'must be an e-mail address',
  date: 'must be a date like 2026-01-31',
  'date-time': 'must be a date and time like 2026-01-31T09:30:00.000Z',
  time: 'must be a time like 09:30',
  uri: 'must be a URL like https://example.com',
  'uri-reference': 'must be a URL',
  uuid: 'must be a UUID',
  hostname: 'must be a host name',
  ipv4: 'must be an IPv4 address',
  ipv6: 'must be an IPv6 address'
}

const HEX_COLOUR = '^#[0-9A-Fa-f]{6}$'
const HTTP_URL = '^[Hh][Tt][Tt][Pp][Ss]?://'
const PATTERN_MESSAGES: Record<string, string> = {
  [HEX_COLOUR]: 'must be a colour like #1A2B3C',
  [HTTP_URL]: 'must be an http:// or https:// URL',
  '^[A-Z]{3}$': 'must be a currency code in capitals like EUR',
  '\\S': 'must not be blank',
  '^[+]?[0-9 ().\\-/]*[0-9][0-9 ().\\-/]*$': 'must be a phone number: digits, spaces and + ( ) . - /',
  '^\\+[0-9]{1,4}$': 'must be a country calling code like +44',
  '^[A-Za-z]{2}$': 'must be a two-letter country code like ES',
  '^[a-z0-9]+(-[a-z0-9]+)*$': 'must be lower-case letters and digits in words joined by single hyphens, like my-salon',
  '^[a-z][a-z0-9_]*$': 'must start with a lower-case letter and hold only lower-case letters, digits and _',
  '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$': 'must be a time like 09:30',
  '^(([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d)?|24:00(:00)?)$': 'must be a time like 09:30 (24:00 for the end of the day)',
  '^-?\\d+(\\.\\d+)?$': 'must be a decimal number like 10.50',
  [MONEY_PATTERN]: 'must be an amount like 10.50: at most 12 digits before the point and 2 after',
  [QUANTITY_PATTERN]: 'must be a quantity greater than 0 like 2.5, with at most 4 decimal places',
  [PERCENTAGE_PATTERN]: 'must be a percentage from 0 to 100 like 7.5, with at most 2 decimal places'
}

const TYPE_NAMES: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  null: 'null'
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`

/** The field an error is about (dotted path) and what the user should send instead. */
const describeAjvError = (error: AjvError): [string, string] => {
  const path = (error.instancePath ?? '').split('/').filter(Boolean).join('.')
  const join = (field: string) => (path ? `${path}.${field}` : field)
  const field = path || 'body'
  const params = error.params ?? {}
  switch (error.keyword) {
    case 'required':
      return [join(params.missingProperty), 'is required']
    case 'additionalProperties':
      return [join(params.additionalProperty), 'is not allowed']
    case 'format':
      return [field, FORMAT_MESSAGES[params.format] ?? 'is not in the expected form']
    case 'pattern':
      return [field, PATTERN_MESSAGES[params.pattern] ?? 'is not in the expected form']
    case 'enum':
      return [field, `must be one of: ${(params.allowedValues ?? []).join(', ')}`]
    case 'const':
      return [field, `must be ${JSON.stringify(params.allowedValue)}`]
    case 'type':
      return [field, `must be ${[params.type].flat().map((type: string) => TYPE_NAMES[type] ?? type).join(' or ')}`]
    case 'minimum':
      return [field, `must be at least ${params.limit}`]
    case 'maximum':
      return [field, `must be at most ${params.limit}`]
    case 'exclusiveMinimum':
      return [field, `must be greater than ${params.limit}`]
    case 'exclusiveMaximum':
      return [field, `must be less than ${params.limit}`]
    case 'minLength':
      return [field, params.limit === 1 ? 'must not be empty' : `must have at least ${plural(params.limit, 'character')}`]
    case 'maxLength':
      return [field, `must have at most ${plural(params.limit, 'character')}`]
    case 'minItems':
      return [field, `must have at least ${plural(params.limit, 'item')}`]
    case 'maxItems':
      return [field, `must have at most ${plural(params.limit, 'item')}`]
    case 'uniqueItems':
      return [field, 'must not repeat an item']
    case 'minProperties':
      return [field, params.limit === 1 ? 'must not be empty' : `must have at least ${plural(params.limit, 'property')}`]
    case 'maxProperties':
      return [field, `must have at most ${plural(params.limit, 'property')}`]
    case 'multipleOf':
      return [field, `must be a multiple of ${params.multipleOf}`]
    default:
      return [field, 'is invalid']
  }
}

/**
 * Validation errors as the spec wants them: an object of field name to message. Where a value may
 * take several forms (a number or a decimal string, a value or null), each form reports its own
 * error: the one that says what is wrong with the form sent wins over "must be <type>", and
 * when only types failed they are listed together ("must be a number or text"). An error inside a
 * value names only the inner key: {email: {$regex: 'a'}} is "email.$regex: is not allowed".
 */
export function fieldErrors(errors: AjvError[]): Record<string, string> {
  const precise: Record<string, string> = {}
  const types: Record<string, string[]> = {}
  for (const error of errors) {
    // anyOf/oneOf/if add a summary next to the precise errors; keep the precise ones.
    if (['anyOf', 'oneOf', 'if', 'not'].includes(error.keyword ?? '') && errors.length > 1) continue
    const [field, message] = describeAjvError(error)
    if (error.keyword === 'type') (types[field] ??= []).push(...[error.params?.type].flat())
    else precise[field] ??= message
  }
  const result: Record<string, string> = {}
  const fields = [...Object.keys(types), ...Object.keys(precise)]
  for (const [field, names] of Object.entries(types)) {
    // An error inside the value (email.$regex) says the object form was meant: the other forms' types ("must be text") are noise.
    if (fields.some((other) => other.startsWith(`${field}.`))) continue
    result[field] = describeAjvError({ keyword: 'type', params: { type: [...new Set(names)] } })[1]
  }
  return Object.assign(result, precise)
}

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
