import { Ajv, addFormats, hooks } from '@feathersjs/schema'
import type { FormatsPluginOptions, Validator } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { TIntersect, TObject, TRecord, TUnion } from '@feathersjs/typebox'
import type { HookContext } from './declarations.js'

const formats: FormatsPluginOptions = [
  'date-time',
  'time',
  'date',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'uuid',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'regex'
]

// Without Ajv's optimisation passes over the code it generates (`code.optimize`): they only remove
// unused names from each validator's source, yet are most of the time and garbage of compiling
// every validator at start; the validators check exactly the same things without them.

// Bodies are validated strictly: no coercion, unknown properties rejected by the schemas themselves.
export const dataValidator: Ajv = addFormats(new Ajv({ allErrors: true, code: { optimize: false } }), formats)

// Query strings are text, so query validation coerces ("10" -> 10, "true" -> true).
export const queryValidator: Ajv = addFormats(
  new Ajv({ allErrors: true, coerceTypes: true, code: { optimize: false } }),
  formats
)

/**
 * A schema's validator, as Feathers' getValidator makes it (a function answering a promise of the
 * validated data, or rejecting with Ajv's ValidationError, which the validate hooks turn into a
 * 400), but compiled as a synchronous Ajv validator. Feathers compiles every schema with
 * `$async: true`, and Ajv writes each as one async function: a list query's validator is a single
 * function of thousands of registers, and an async function keeps its registers in a heap object
 * made on every call. The same checks made synchronously are several times cheaper and allocate
 * no such object.
 */
export function getValidator<T = any, R = T>(schema: TObject | TIntersect | TUnion<TObject[]> | TRecord, validator: Ajv): Validator<T, R> {
  const validate = validator.compile(schema)
  const coerces = Boolean(validator.opts.coerceTypes)
  return (data) => {
    if (!validate(data)) return Promise.reject(new Ajv.ValidationError(validate.errors ?? []))
    const infinite = coerces ? infiniteNumberAt(data) : undefined
    if (infinite !== undefined) return Promise.reject(new Ajv.ValidationError([{ instancePath: infinite, keyword: 'type', params: { type: 'number' } }]))
    return Promise.resolve(data as unknown as R)
  }
}

/**
 * Where a coerced query holds a number that is not finite: Ajv turns "1e400" into Infinity after
 * its type check, so Infinity passed for a number and even a whole number ($skip=1e400 reached
 * the SQL as an offset). Bodies need no such check: their type check refuses Infinity.
 */
function infiniteNumberAt(value: unknown, path = ''): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path
  if (!value || typeof value !== 'object') return undefined
  for (const [key, inner] of Object.entries(value)) {
    const found = infiniteNumberAt(inner, `${path}/${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

/** The query validation of a call that takes no parameters: any is a 400 naming it. */
export const noFilters = hooks.validateQuery(getValidator(Type.Object({}, { additionalProperties: false }), queryValidator))

/**
 * Query validation of a service outside the resource factory: the list (find) takes its filters,
 * every other call none, so a filter on a call by id or a write (?searchTerm=ab) is a 400 naming
 * it, as it is on every tenant resource.
 */
export function filtersOnListOnly(list: Validator) {
  const validateList = hooks.validateQuery(list)
  return (context: HookContext) => (context.method === 'find' ? validateList(context) : noFilters(context))
}
