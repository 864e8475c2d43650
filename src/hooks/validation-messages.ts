import { MONEY_PATTERN, PERCENTAGE_PATTERN, QUANTITY_PATTERN } from '../schemas.js'

/**
 * Validation errors in the user's words: what a JSON-Schema validator (Ajv) refuses, as the field
 * it is about and what to send instead. Request bodies and queries answer these (hooks/errors.ts),
 * and the start-up's check of the settings says them of an environment variable (preflight.ts).
 */

export interface AjvError {
  instancePath?: string
  keyword?: string
  message?: string
  params?: Record<string, any>
}

export const isAjvErrorList = (value: unknown): value is AjvError[] =>
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
export const describeAjvError = (error: AjvError): [string, string] => {
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
