import type { HookContext } from '../declarations.js'
import { fieldError } from '../hooks/errors.js'
import { CUSTOM_FIELD_FILTER, customFieldFilters } from '../hooks/custom-field-filters.js'
import type { CustomFieldEntity } from '../hooks/custom-field-values.js'
import type { Relation } from './read-model.js'

/** The cursor of a keyset page: the (updated_at, id) of the last record read. */
export interface KeysetCursor {
  updated_at: string
  id: number
}

/** A condition on stored custom-field values (from custom_fields_by_name filters). */
export type CustomFieldFilter =
  /** The record's values contain any of these objects (jsonb @>, served by the GIN index on custom_fields). */
  | { anyOf: Record<string, unknown>[] }
  /** A number or date range on one field. */
  | { key: string; type: 'number' | 'date'; comparisons: ['>' | '>=' | '<' | '<=', unknown][] }

/**
 * What a list or a read by id asks of the engine besides its filters (params.query): built by one
 * hook, readRequest, the last before the service; RecordService reads nothing else.
 */
export interface ReadRequest {
  /** The related records the answer attaches. */
  relations?: Relation[]
  /** $select: the properties the answer keeps (id always). */
  select?: string[]
  /** $after: a keyset page, the records after this (updated_at, id) in the $sort direction. */
  after?: KeysetCursor
  /** $withDeleted: deleted records are listed too, with their deleted_at. */
  withDeleted?: boolean
  customFieldFilters?: CustomFieldFilter[]
  /** The answer may go out as the JSON text Postgres wrote: a REST request's own call of a method nothing runs after. */
  rendered?: boolean
  /** The list is answered as CSV (Accept: text/csv), every page of it or the first `limit` records (csv-export.ts). */
  csv?: { limit?: number }
}

declare module '@feathersjs/feathers' {
  interface Params {
    read?: ReadRequest
  }
}

/** What a resource declares that its reads take: the list flag, the relations, the fields, custom fields by name. */
export interface ReadDeclaration {
  /** The list flag that attaches the list relations (e.g. fastJoinForContactList). */
  flag?: string
  list?: Relation[]
  record?: Relation[]
  /** The properties of the result: what $select may name. */
  fields: string[]
  /** Custom fields a list filters on by name (custom_fields_by_name.<name>). */
  customFields?: CustomFieldEntity
}

/**
 * The query keys of a read that its query schema does not validate, taken by readRequest: $select
 * and custom_fields_by_name.<name> of a list (checked against the resource and its organization),
 * and the list flag and $select of a read by id (a list validates its flag as a boolean).
 */
export const isReadParameter = (key: string, declaration: ReadDeclaration, method: string) =>
  method === 'find'
    ? key === '$select' || (declaration.customFields !== undefined && key.startsWith(CUSTOM_FIELD_FILTER))
    : key === declaration.flag || key === '$select'

/**
 * The last before hook of find and get: takes the read's parameters out of the validated query
 * into params.read. The list flag and $select (a joined object named there attaches the list
 * relations), $withDeleted and $after (a keyset page sorts by {updated_at, id} in one direction,
 * without $skip), the custom-field filters by name (once the organization is pinned), and whether
 * the answer may be sent as the text Postgres wrote (set last, so no earlier hook that copied the
 * params to call another service carries it).
 */
export function readRequest(declaration: ReadDeclaration, methodsWithAfterRules: Set<string>) {
  const joined = new Set([...(declaration.list ?? []), ...(declaration.record ?? [])].map((relation) => relation.as))
  const fields = new Set(declaration.fields)
  return async (context: HookContext) => {
    const { params, method } = context
    const read: ReadRequest = {}
    const query: Record<string, unknown> = {}
    const custom: Record<string, unknown> = {}
    let joinList = false
    for (const [key, value] of Object.entries(params.query ?? {})) {
      if (key === declaration.flag) joinList = value === true || value === 'true'
      else if (key === '$select') read.select = selected(value, fields)
      else if (key.startsWith(CUSTOM_FIELD_FILTER)) custom[key.slice(CUSTOM_FIELD_FILTER.length)] = value
      else if (key === '$withDeleted' && method === 'find') read.withDeleted = value === true
      else if (key === '$after' && method === 'find') read.after = value as KeysetCursor
      else query[key] = value
    }
    if (read.select?.some((name) => joined.has(name))) joinList = true
    if (read.after) keysetOrder(query)
    if (Object.keys(custom).length > 0) {
      read.customFieldFilters = await customFieldFilters(context, declaration.customFields!, query.organization_id as number, custom)
    }
    // A CSV names related records (company, owner) whether the list flag is set or not.
    const csv = method === 'find' && !methodsWithAfterRules.has(method) && Boolean(params.csv?.owns(context))
    if (csv && query.$skip !== undefined) throw fieldError('$skip', 'cannot be combined with a CSV export: the export reads every record after the last one it read')
    const relations = method === 'find'
      ? (declaration.list && (!declaration.flag || joinList || csv) ? declaration.list : undefined)
      : declaration.record ?? (joinList ? declaration.list : undefined)
    if (relations) read.relations = relations
    // The adapter gives every list a default $limit later: only the client's own caps an export.
    if (csv) read.csv = { limit: typeof query.$limit === 'number' ? query.$limit : undefined }
    if (params.restRequest?.owns(context) && !methodsWithAfterRules.has(method)) read.rendered = true
    params.query = query
    params.read = read
  }
}

/** $select's names, each a property of the resource (joined objects by their names, e.g. company). */
function selected(value: unknown, fields: Set<string>): string[] {
  const names = Array.isArray(value) ? value : [value]
  for (const name of names) {
    if (typeof name !== 'string' || !fields.has(name)) throw fieldError(`$select.${String(name)}`, 'is not a field of this resource')
  }
  return names as string[]
}

/** A keyset page is ordered by {updated_at, id} in one direction (the default), and starts after its cursor, not at a $skip. */
function keysetOrder(query: Record<string, unknown>) {
  if (query.$skip !== undefined) throw fieldError('$after', 'cannot be combined with $skip: a keyset page starts after its cursor')
  const sort = query.$sort as Record<string, number> | undefined
  if (sort === undefined) query.$sort = { updated_at: 1, id: 1 }
  else if (Object.keys(sort).join(',') !== 'updated_at,id' || Number(sort.updated_at) !== Number(sort.id)) {
    throw fieldError('$sort', 'must be {updated_at, id}, both in one direction, with $after')
  }
}
