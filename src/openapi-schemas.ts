/**
 * The parts of the OpenAPI document (src/openapi.ts) derived from the services' TypeBox schemas:
 * examples valid against a schema, a list's query parameters as the service reads them, and the
 * list envelopes.
 */

import { Type } from '@feathersjs/typebox'
import type { TObject } from '@feathersjs/typebox'
import { MAX_BATCH_RECORDS, batchOf } from './engine/batch-writes.js'
import { RecordId } from './schemas.js'

/** Removes TypeBox's symbols and turns nested $id schemas into plain ones. */
export const plain = (schema: unknown): any => JSON.parse(JSON.stringify(schema ?? {}))

const FORMAT_SAMPLES: Record<string, string> = {
  'date-time': '2026-01-15T09:30:00.000Z', date: '2026-01-15', time: '09:30:00', email: 'ada@example.com', uri: 'https://example.com', url: 'https://example.com'
}
const NAME_SAMPLES: Record<string, string> = {
  first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '600 123 456', name: 'Example', subject: 'Follow-up call', currency: 'EUR',
  timezone: 'Europe/Madrid', time_zone: 'Europe/Madrid', content: 'Hello!', searchTerm: 'Ada', password: 'correct horse battery'
}
const STRING_SAMPLES = ['Example', '10.50', '1', 'EUR', 'ES', '+34', '+34 600 123 456', '#3366FF', '09:30', '2026-01-15', 'https://example.com/image.png', 'example-slug', 'example_key', 'Europe/Madrid']

const fits = (value: string, schema: any) =>
  (schema.minLength === undefined || value.length >= schema.minLength) &&
  (schema.maxLength === undefined || value.length <= schema.maxLength) &&
  (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value))

function sampleString(schema: any, name?: string): string {
  if (schema.format && FORMAT_SAMPLES[schema.format]) return FORMAT_SAMPLES[schema.format]
  const candidates = [name ? NAME_SAMPLES[name] : undefined, ...STRING_SAMPLES].filter((value): value is string => value !== undefined)
  return candidates.find((value) => fits(value, schema)) ?? 'x'.repeat(Math.max(schema.minLength ?? 1, 1))
}

export const isOperatorObject = (schema: any) => schema?.type === 'object' && Object.keys(schema.properties ?? {}).some((key) => key.startsWith('$'))

/**
 * An example value valid against the schema. `full`: every property (answers); otherwise the
 * required ones and a few optional ones (a request shows what is needed and a little more).
 */
export function exampleOf(schema: any, components: Record<string, any>, full: boolean, name?: string, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 8) return undefined
  if (schema.$ref) return exampleOf(components[schema.$ref.split('/').pop()], components, full, name, depth + 1)
  if ('example' in schema) return schema.example
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0]
  if ('default' in schema) return schema.default
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  const branches = schema.anyOf ?? schema.oneOf
  // A record as answered: not deleted.
  if (name === 'deleted_at' && branches?.some((b: any) => b.type === 'null')) return null
  if (branches) {
    const branch = branches.find((b: any) => b.type !== 'null' && !isOperatorObject(b)) ?? branches[0]
    return exampleOf(branch, components, full, name, depth + 1)
  }
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part: any) => exampleOf(part, components, full, name, depth + 1)))
  switch (schema.type) {
    case 'null': return null
    case 'boolean': return true
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1)
      return schema.maximum !== undefined ? Math.min(low, schema.maximum) : low
    }
    case 'string': return sampleString(schema, name)
    case 'array': {
      if (schema.maxItems === 0) return []
      const item = exampleOf(schema.items, components, full, undefined, depth + 1)
      return item === undefined ? [] : Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, (_, i) => (typeof item === 'number' && schema.uniqueItems ? item + i : item))
    }
    case 'object': {
      const properties: Record<string, any> = schema.properties ?? {}
      const required = new Set<string>(schema.required ?? [])
      const optional = Object.keys(properties).filter((key) => !required.has(key) && !key.startsWith('$') && key !== 'organization_id')
      const wanted = full ? Object.keys(properties) : [...required, ...optional.slice(0, Math.max(3 - required.size, schema.minProperties ?? 0, 0))]
      const value: Record<string, unknown> = {}
      for (const key of wanted) {
        const inner = exampleOf(properties[key], components, full, key, depth + 1)
        if (inner !== undefined) value[key] = inner
      }
      return value
    }
    default: return undefined
  }
}

/** How the sync and partial-read parameters are sent (docs/bulk-and-sync.md). */
const SYNC_PARAMETERS: Record<string, Record<string, unknown>> = {
  $select: { style: 'form', explode: true, description: 'fields to return, id always: $select[]=first_name&$select[]=email; joined objects by their names (e.g. company)' },
  $withDeleted: { description: 'true: deleted records are listed too, with their deleted_at (a sync sees deletions)' }
}

/**
 * $after is an object the query string sends as its two fields, $after[updated_at] and $after[id]:
 * each is a parameter of its own, so that a form (Swagger UI's "Try it out") leaves both empty
 * rather than filling in a made-up cursor, which would also clash with $skip's default.
 */
function keysetParameters(cursor: any) {
  const note = 'keyset page: with $after[id], the records after this (updated_at, id) in $sort {updated_at, id} order (the default with $after); not with $skip. The page has no total; next is the cursor of its last record'
  return Object.entries<any>(cursor.properties ?? {}).map(([field, schema]) => ({
    name: `$after[${field}]`, in: 'query', required: false, schema,
    description: field === 'updated_at' ? note : 'the id of the last record read (with $after[updated_at])'
  }))
}

/**
 * $or (an array of filter objects) has no query-string form OpenAPI can describe (qs reads
 * $or[0][email]=…): the list's description says how to send it instead of a parameter a form
 * would fill with a sample filter.
 */
export const OR_DESCRIPTION = (branches: number) =>
  `$or: the records matching any of 1 to ${branches} filter objects made of this list's filters, as $or[0][email]=a@example.com&$or[1][last_name]=Smith in the query string, or {"query": {"$or": [{"email": "a@example.com"}, {"last_name": "Smith"}]}} in the JSON body of the GET.`

/** custom_fields_by_name.<name> filters, on the lists of resources with custom fields by name. */
export const customFieldFilterParameter = {
  name: 'custom_fields_by_name.<name>', in: 'query', required: false, schema: {},
  description: 'a filter on the custom field <name> (URL-encoded): a value or $in for any field, $gt $gte $lt $lte for number and date fields; an unknown name is a 400'
}

/**
 * The query string as the service reads it (qs): $sort and operator objects nest with brackets,
 * which is OpenAPI's deepObject style, so Swagger UI's "Try it out" sends $sort[first_name]=-1.
 * $limit and $skip are integers with defaults the service accepts.
 */
export function queryParameters(query: any, defaultLimit: number) {
  const body = plain(query)
  const properties = body.properties ?? {}
  const required = new Set<string>(body.required ?? [])
  return Object.entries(properties).flatMap(([name, schema]: [string, any]): Record<string, unknown> | Record<string, unknown>[] => {
    if (name === '$limit') return { name, in: 'query', required: false, schema: { ...schema, default: Math.min(defaultLimit, schema.maximum ?? defaultLimit) }, description: 'page size' }
    if (name === '$skip') return { name, in: 'query', required: false, schema: { ...schema, default: 0 }, description: 'rows to skip' }
    if (name === '$sort') {
      const first = Object.keys(schema.properties ?? {}).find((key) => key !== 'organization_id') ?? 'id'
      return {
        name, in: 'query', required: false, style: 'deepObject', explode: true, schema,
        example: { [first]: 1 },
        description: `{field: 1 | -1}, sent as $sort[${first}]=1; ties are broken by id`
      }
    }
    if (name === '$after') return keysetParameters(schema)
    if (name === '$or') return []
    if (SYNC_PARAMETERS[name]) return { name, in: 'query', required: false, schema, ...SYNC_PARAMETERS[name] }
    const operators = (schema.anyOf ?? []).find(isOperatorObject)
    const description = [
      schema.description,
      operators
        ? `equals; or comparisons in deepObject form: ${name}[$gte]=…, ${name}[$in][]=… (${Object.keys(operators.properties).join(' ')}). Filters may also be sent as {"query": {...}} in the JSON body of the GET.`
        : 'May also be sent as {"query": {...}} in the JSON body of the GET.'
    ].filter(Boolean).join('. ')
    return { name, in: 'query', required: required.has(name), schema: valueForm(schema), description }
  })
}

/** The plain value form of a filter (its operator object and null left out: a query string cannot send them as such). */
const valueForm = (schema: any): any => {
  const forms = (schema.anyOf ?? [schema]).filter((form: any) => !isOperatorObject(form) && form.type !== 'null')
  return forms.length === 1 ? (forms[0].anyOf ? valueForm(forms[0]) : forms[0]) : schema
}

export const pageOf = (item: unknown) => ({
  type: 'object',
  required: ['total', 'limit', 'skip', 'data'],
  properties: { total: { type: 'integer', examples: [1] }, limit: { type: 'integer', examples: [10] }, skip: { type: 'integer', examples: [0] }, data: { type: 'array', items: item } }
})

/** A list that takes $after: a keyset page has no total, and next, the cursor of its last record. */
export const keysetPageOf = (item: unknown) => ({
  type: 'object',
  required: ['limit', 'skip', 'data'],
  description: 'a keyset page ($after) has no total, and next: the {updated_at, id} of its last record (null when empty); other pages have total',
  properties: {
    ...pageOf(item).properties,
    next: { type: ['object', 'null'], properties: { updated_at: { type: 'string', format: 'date-time' }, id: { type: 'integer' } } }
  }
})

/**
 * The batch methods of a resource in the document: their bodies with the resource's own create
 * and patch records (copied without their $id), and what each does.
 */
export function batchMethodDocs(resource: string, upsertKeys: string[], data?: TObject, patch?: TObject) {
  const organization_id = Type.Optional(RecordId)
  const idProperty = Type.Unsafe<string>({ type: 'string', enum: upsertKeys })
  const anyRecord = Type.Object({}, { additionalProperties: true })
  const createBody = data ? Type.Object({ ...data.properties }, { additionalProperties: false }) : anyRecord
  const changes = Type.Object({ id: RecordId, ...(patch?.properties ?? {}) }, { additionalProperties: false })
  const name = resource.replace(/(^|-)([a-z])/g, (_m, _dash, letter: string) => letter.toUpperCase())
  const inputOrder = Type.Array(anyRecord, { description: 'the records, in input order' })
  const notFound = 'all or nothing (404 naming the first id not found)'
  return {
    upsert: {
      data: Type.Object({ organization_id, idProperty, records: batchOf(createBody) }, { $id: `${name}Upsert`, additionalProperties: false }),
      result: Type.Object({ created: Type.Integer(), updated: Type.Integer(), data: inputOrder }, { $id: `${name}UpsertResult` }),
      status: 201,
      description: `Creates or changes 1..${MAX_BATCH_RECORDS} records matched by idProperty (${upsertKeys.join(', ')}); all or nothing.`
    },
    'batch-update': {
      data: Type.Object({ organization_id, records: batchOf(changes) }, { $id: `${name}BatchUpdate`, additionalProperties: false }),
      result: inputOrder,
      patch: true,
      description: `Changes 1..${MAX_BATCH_RECORDS} records by id; ${notFound}.`
    },
    'batch-delete': {
      data: Type.Object(
        { organization_id, ids: Type.Array(RecordId, { minItems: 1, maxItems: MAX_BATCH_RECORDS, uniqueItems: true }) },
        { $id: `${name}BatchDelete`, additionalProperties: false }
      ),
      result: inputOrder,
      patch: true,
      description: `Deletes 1..${MAX_BATCH_RECORDS} records by id, as single deletes do; ${notFound}.`
    },
    createMany: { maxItems: MAX_BATCH_RECORDS }
  }
}
