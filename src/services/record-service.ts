import { KnexService } from '@feathersjs/knex'
import type { KnexAdapterOptions, KnexAdapterParams } from '@feathersjs/knex'
import { BadRequest, NotFound, MethodNotAllowed } from '@feathersjs/errors'
import type { Id, NullableId } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import pg from 'pg'
import { containsPattern } from './like.js'
import { plannedOncePool } from '../db.js'
import { releaseError } from '../db-connections.js'
import type { MarkedTables } from './joins.js'
import { NO_VERSION, changeMark, inlineRelationVersions, inlineRelationsSelect, markedTables, relationTables, relationsMark } from './joins.js'
import { recordPagesOf } from './record-pages.js'
import type { JoinSpec } from './joins.js'
import { UNCONFIRMED, recordTextsOf } from './record-texts.js'
import { WirePage, WireRecord, tableColumns, wireProjection, wireVersion } from './wire-pages.js'
import type { TableColumn, WireRequest, WireShape } from './wire-pages.js'

/** Rows of another table that live and die with a record: deleting the record soft-deletes them. */
export interface SoftDeleteCascade {
  table: string
  /** The column of `table` that holds the record's id. */
  column: string
}

export interface RecordServiceOptions extends KnexAdapterOptions {
  /** DELETE sets deleted_at instead of removing the row, and deleted rows disappear from every read. */
  softDelete?: boolean
  /** Deleting a record soft-deletes these dependants at the same instant, in the same transaction. */
  softDeleteCascade?: SoftDeleteCascade[]
  /**
   * The columns a query may filter on (set by the resource factory from the query schemas).
   * Any other key is refused with a 400 before it becomes SQL.
   */
  filterable?: ReadonlySet<string>
  /** The keys a batch upsert may match records by (set by the resource factory from the declaration). */
  upsertKeys?: Record<string, UpsertKey>
  /** What the resource's resolvers do, when its pages may be answered as JSON Postgres writes (wire-pages.ts). */
  wire?: WireShape
}

/** A condition on stored custom-field values (built by the resource factory from custom_fields_by_name filters). */
export type CustomFieldFilter =
  /** The record's values contain any of these objects (jsonb @>, served by the GIN index on custom_fields). */
  | { anyOf: Record<string, unknown>[] }
  /** A number or date range on one field, served by custom_field_ranges (migration 20261123001400_sync). */
  | { organizationId: number; key: string; column: 'number_value' | 'date_value'; comparisons: ['>' | '>=' | '<' | '<=', unknown][] }

/** The cursor of a keyset page: the (updated_at, id) of the last record read. */
export interface KeysetCursor {
  updated_at: string
  id: number
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** $withDeleted: deleted records are listed too, with their deleted_at. */
    withDeleted?: boolean
    /** $after: a keyset page, the records after this (updated_at, id) in the $sort direction. */
    after?: KeysetCursor
    customFieldFilters?: CustomFieldFilter[]
    /** The relations a list attaches to its records, which RecordService may read in the list's own statement (joinedInline). */
    listJoins?: JoinSpec[]
    /** The HTTP request of a REST call to a resource with wire pages (wire-pages.ts). */
    wireRequest?: WireRequest
    /** Set on the request's own call to a list (answerAsWire): its page may be answered as wire text. */
    asWire?: boolean
  }
}

/**
 * How a batch upsert recognises a record: SQL over a sent key (the SQL expression `k`), so that
 * the match, the per-key lock and the check for keys repeated in a batch agree whatever the
 * case or spelling of the key.
 */
export interface UpsertKey {
  /** The condition on a stored row (alias t) matching key k, served by an index: e.g. lower(t.email) = lower(k). */
  matches: (k: string) => string
  /** The normalized key, e.g. lower(k): what is locked, and compared within a batch. */
  sent: (k: string) => string
  /** The key of a record about to be written (its prepared row); null or undefined: it has none. */
  value: (row: Record<string, any>) => string | null | undefined
  /** The body field the key comes from, where an error about it is reported. */
  field: string
}

/** One record of a batch upsert: the row to write, and the columns the client set (the others stay on a match). */
export interface UpsertRecord {
  row: Record<string, any>
  sent: string[]
}

/** A key of one record repeats the key of an earlier record of the same batch. */
export class RepeatedKeys extends BadRequest {
  constructor(errors: Record<string, Record<string, string>>) {
    super('Invalid records', { errors })
  }
}

/** Columns an upsert never changes on a record it matches. */
const KEPT_ON_MATCH = new Set(['id', 'organization_id', 'created_by_user_id', 'created_at', 'updated_at', 'deleted_at'])

/** A stored value written back as it is: json(b) values go back as JSON text. */
const storedValue = (value: unknown) =>
  value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value

/** A page of search matches in the spec's list envelope. */
export interface SearchPage<T> {
  total: number
  limit: number
  skip: number
  data: T[]
}

/**
 * A statement of known text on a connection of knex's pool, without a query builder. Named, it is
 * prepared: Postgres parses and plans it once per connection; unnamed (name undefined), it is
 * parsed and planned for its values on every call, as knex's own statements are. Announced to
 * knex's 'query' listeners like any statement, with its `name` (the query-count tests and the
 * benchmark's EXPLAIN see it).
 */
export async function runStatement<T>(db: Knex, name: string | undefined, text: string, values: unknown[], types?: WireTypes): Promise<T[]> {
  const client = db.client as any
  // A named statement outside a transaction runs on the connections that plan it once (plannedOncePool).
  const pool = name && !(db as any).isTransaction ? plannedOncePool(db) : undefined
  const connection = pool ? await pool.connect() : await client.acquireConnection()
  let failure: unknown
  try {
    client.emit('query', { method: 'select', sql: text, bindings: values, name, __knexUid: connection.__knexUid })
    return (await connection.query({ name, text, values, types })).rows as T[]
  } catch (error) {
    failure = error
    throw error
  } finally {
    // A lost connection is discarded, not given back to the next statement.
    if (pool) connection.release(releaseError(failure))
    else await client.releaseConnection(connection)
  }
}

const TIMESTAMPTZ_OID = 1184
const parseTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => unknown

/**
 * A timestamptz as the text JSON writes for its Date (`2026-11-25T13:18:53.120Z`), made from
 * Postgres's own text without a Date: `YYYY-MM-DD HH:MM:SS[.fff]+00`, what a session in UTC
 * sends, is rearranged (the fraction padded or cut to milliseconds, as a Date keeps them); any
 * other offset, a year of five digits, BC or infinity goes through pg's parser and the Date.
 */
export function timestampText(text: string): string | null {
  const n = text.length
  if (
    (n === 22 || (n >= 24 && n <= 29 && text.charCodeAt(19) === 46)) &&
    text.charCodeAt(4) === 45 && text.charCodeAt(10) === 32 && text.endsWith('+00')
  ) {
    const fraction = n === 22 ? '000' : n === 26 ? text.slice(20, 23) : (text.slice(20, n - 3) + '00').slice(0, 3)
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`
  }
  const parsed = parseTimestamptz(text)
  return parsed instanceof Date ? (Number.isNaN(parsed.getTime()) ? null : parsed.toISOString()) : (parsed as null)
}

/** pg's type parsers for a query, as a query config's `types` takes them. */
export interface WireTypes {
  getTypeParser(oid: number, format?: string): (value: string) => unknown
}

/**
 * The parsers of a read whose rows go to a client: timestamps arrive as the ISO text the client
 * gets (timestampText) instead of Dates that JSON turns into that same text. A page of 50 deals
 * holds 150 timestamps; a Date costs a parse, an object and a toJSON call in JSON.stringify
 * (which leaves its fast path for it): in a micro-benchmark a page serialised twice as fast.
 * Internal reads keep their Dates.
 */
export const WIRE_TYPES: WireTypes = {
  getTypeParser: (oid: number, format?: string) =>
    oid === TIMESTAMPTZ_OID && format !== 'binary' ? timestampText : pg.types.getTypeParser(oid, format as any)
}

/** The parsers a read uses: the wire's for a client's call on a Postgres server, pg's own otherwise. */
const typesFor = (params: { provider?: string }, db: Knex) =>
  params.provider && db.client.config.client === 'pg' ? WIRE_TYPES : undefined

/**
 * The lists (a page, or an array without pagination) whose records came with the relations of
 * params.listJoins from their own statement: the join hook has nothing left to attach to them.
 */
export const joinedInline = new WeakSet<object>()

/** The select list of a service's list relations, and its page statements with those columns (preparedPage). */
interface InlineJoins {
  select: string
  /** The relations' column names, in the order of `select`. */
  names: string[]
  /** The relations' versions (inlineRelationVersions), a SQL text expression. */
  versions: string
  /** The relations themselves (for their change mark, relationsMark). */
  specs: JoinSpec[]
  pageStatements: Map<string, PageStatement | null>
  /** What wire pages with these relations need, once the table's columns are known (WireSql). */
  wire?: Promise<WireSql | null>
  /** Prefix of the keys of these records' texts in the database's record texts (record-texts.ts): one per service and relations. */
  textScope: string
}

/**
 * A service's wire statements with one set of relations (or none): each record's JSON text
 * (`projection`, a select list on the rows `page`), the version it is written from (`version`,
 * record-texts.ts), and the named statements reading records by key ($1 the organization, $2
 * the ids): their versions, and their texts with their versions. Where the relations' tables
 * carry change marks, `marked`: the record's own part of its version, the relations' mark (of
 * an SQL expression of the organization) and the statement reading both by key; the statements
 * by key then read the mark beside the versions, in the same snapshot.
 */
interface WireSql {
  projection: string
  version: string
  marked?: { own: string; mark: (organization: string) => string; ownByKey: string }
  versionsByKey: string
  textsByKey: string
  /** The statement reading the change mark of every table a page reads ($1 the organization), where they all carry one (record-pages.ts). */
  pageMark?: NamedText
}

/** A named statement's name and text. */
interface NamedText {
  name: string
  text: string
}

/** A row of a wire page's statement: a record's id, its version where the statement reads it (record-texts.ts), the page total. */
interface PageKey {
  id: number
  /** The record's version, or its own part where the statement reads the relations' mark. */
  crm_version?: string | null
  crm_mark?: string | null
  crm_page_total?: string | number | null
}
/** A record's text read by key, with the version it was written from (and the relations' mark then, where there is one). */
interface KeyedText {
  id: number
  crm_wire: string
  crm_version: string | null
  crm_mark?: string | null
}
/** A prefix of record-text keys, one per service and set of relations. */
let textScopes = 0
const textScope = (service: { table: string }) => `${service.table}:${++textScopes}:`

/** The records' JSON texts of a wire statement's rows, or undefined when one holds a value the SQL does not format (NULL). */
const wireTexts = (rows: { crm_wire?: string | null }[]) =>
  rows.some((row) => row.crm_wire === null || row.crm_wire === undefined) ? undefined : rows.map((row) => row.crm_wire as string)

/** The $after of the page that follows a record: its (updated_at, id). */
const cursorOf = (record: Record<string, any>): KeysetCursor => ({ updated_at: new Date(record.updated_at).toISOString(), id: record.id })

/** The filters of a list that do not change which record a read by id returns. */
const PAGING = new Set(['$limit', '$skip', '$sort'])
/** The column a list page's rows carry their total in, removed before the page is answered. */
const PAGE_TOTAL = 'crm_page_total'

/**
 * The total a page's rows carry in `column` (removed from them). An empty page says nothing:
 * past the end ($skip > 0) the count runs on its own, otherwise there is nothing to count.
 */
async function carriedTotal(rows: Record<string, any>[], column: string, skip: number, count?: Knex.QueryBuilder) {
  const total = rows.length > 0 ? Number(rows[0][column] ?? 0) : skip > 0 && count ? Number((await count)[0]?.total ?? 0) : 0
  for (const row of rows) delete row[column]
  return total
}

/** A page's SQL with its parameters: each binding is a constant, or which value of the call goes there. */
interface PageStatement {
  /** Tells the statements of every service and shape apart (a kept page's key, record-pages.ts). */
  id: number
  /** Named (prepared) only for the unfiltered page; a filtered page is planned for its values. */
  name?: string
  text: string
  values: (unknown | Slot)[]
}
/** Where a value of the call goes in a page statement: its $limit, its $skip, or the nth value of its filters. */
type Slot = typeof LIMIT | typeof SKIP | FilterValue
class FilterValue {
  constructor(readonly index: number) {}
}
const LIMIT = Symbol('$limit')
const SKIP = Symbol('$skip')
// Stand-ins a page statement is compiled with, told apart from constants in its bindings: a
// $limit and a $skip that must each appear once (the adapter takes no negative ones), numbers no
// filter uses, and text no filter holds.
const STAND_IN = { limit: 3, skip: 5, number: -8_000_000, text: '\u0001crm stand-in ' }
/** A service keeps at most this many page statements (shapes of list queries), then builds the others. */
const MAX_PAGE_STATEMENTS = 500
/** Page statements made so far, in every service: each one's id. */
let pageStatementCount = 0
/** A name per distinct statement text (page statements, wire reads by id): a connection refuses one name for two texts (two services on one table). */
const statementNames = new Map<string, string>()
/** A named statement: its name, its text and the values of this call. */
interface NamedStatement {
  name: string
  text: string
  values: unknown[]
}
/** The rows Postgres's planner assumes unnest of an array parameter yields (the generic plan's estimate). */
const UNSEEN_ARRAY_ROWS = 10
const notFound = (id: Id) => new NotFound(`No record found for id '${id}'`)
const nameOf = (kind: string, text: string) => {
  let name = statementNames.get(text)
  if (!name) statementNames.set(text, (name = `${kind} ${statementNames.size + 1}`))
  return name
}

/**
 * `promise`, kept by the caller, with `forget` called should it fail: a read of the schema that
 * failed (the database away for a moment) is then tried again by the next call.
 */
function forgottenOnFailure<T>(promise: Promise<T>, forget: () => void): Promise<T> {
  promise.catch(forget)
  return promise
}

/** A statement selecting each record's JSON text (a wire projection) from the rows of another. */
const wireWrapped = (projection: string, rows: string) => `SELECT ${projection} FROM (${rows}) AS page`

/** What a sync's keyset page asks besides its cursor ($after and $withDeleted are taken out of the query). */
const SYNC_PAGE = new Set(['organization_id', '$sort', '$limit'])

/** The paging and order of a list, kept in a page statement's query shape as they are. */
const SHAPE_LITERAL = new Set(['$sort', '$select'])

/**
 * The shape of a list's query and the values that fill it: keys, operators, nulls, booleans,
 * $sort and $select as they are, every number or text replaced by a stand-in that tells it apart
 * in the compiled statement's bindings ($limit and $skip by their own). Undefined for a query
 * holding anything else (a Date, an undefined filter), which keeps the builder.
 */
interface Shape {
  /** Tells shapes apart: what the statement's text depends on. */
  key: string
  /** The query with stand-ins for its values, to compile the statement with. */
  standIn: Record<string, any>
  /** The call's values, in the order of their stand-ins. */
  values: unknown[]
}
function shapeOf(query: Record<string, any>): Shape | undefined {
  const values: unknown[] = []
  const key: string[] = []
  const walk = (value: any): any => {
    if (value === null || typeof value === 'boolean') {
      key.push(String(value))
      return value
    }
    if (typeof value === 'number' || typeof value === 'string') {
      key.push(typeof value === 'number' ? '#' : '$')
      values.push(value)
      return typeof value === 'number' ? STAND_IN.number - values.length : `${STAND_IN.text}${values.length}`
    }
    if (Array.isArray(value)) {
      key.push('[')
      const items = value.map(walk)
      key.push(']')
      return items
    }
    if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      key.push('{')
      const fields: Record<string, any> = {}
      for (const field in value) {
        key.push(JSON.stringify(field))
        fields[field] = walk(value[field])
      }
      key.push('}')
      return fields
    }
    throw new TypeError('not a filter value')
  }
  const standIn: Record<string, any> = {}
  try {
    for (const field in query) {
      if (field === '$limit' || field === '$skip') continue
      if (SHAPE_LITERAL.has(field)) {
        key.push(`${field}${JSON.stringify(query[field])}`)
        standIn[field] = query[field]
      } else {
        key.push(JSON.stringify(field))
        standIn[field] = walk(query[field])
      }
    }
  } catch {
    return undefined
  }
  return { key: key.join(' '), standIn, values }
}

/**
 * The slot a binding of a statement compiled with stand-ins fills, the binding itself when it is a
 * constant (text or a boolean), or null when it cannot tell: such a shape keeps the builder.
 */
function slotOf(binding: unknown, count: number): unknown | Slot | null {
  if (binding === STAND_IN.limit) return LIMIT
  if (binding === STAND_IN.skip) return SKIP
  if (typeof binding === 'number') {
    // Any other number in the statement would be ambiguous.
    const index = STAND_IN.number - binding - 1
    return Number.isInteger(index) && index >= 0 && index < count ? new FilterValue(index) : null
  }
  if (typeof binding === 'string' && binding.includes(STAND_IN.text)) {
    // A stand-in the service changed (a LIKE pattern made of it) cannot take the call's value.
    const index = Number(binding.slice(STAND_IN.text.length)) - 1
    return binding.startsWith(STAND_IN.text) && Number.isInteger(index) && index >= 0 && index < count ? new FilterValue(index) : null
  }
  // An array or object could hold stand-ins where no slot says.
  return typeof binding === 'string' || typeof binding === 'boolean' ? binding : null
}

/** The builder limited to the page the filters ask for. */
const paged = (builder: Knex.QueryBuilder, filters: { $limit?: number; $skip?: number }) => {
  if (filters.$limit) builder.limit(filters.$limit)
  if (filters.$skip) builder.offset(filters.$skip)
  return builder
}

const qualify = (table: string, column: string) => (column.includes('.') ? column : `${table}.${column}`)

/**
 * Tables whose rows' (organization_id, updated_at) record_changes mirrors, with the index that
 * serves an order or a filter on updated_at (migration 20261123001600_record_changes).
 */
const CHANGE_LOGGED = new Set(['companies', 'contacts', 'deals', 'deal_products', 'activities', 'products'])
/** The alias record_changes is joined under. */
const CHANGES = 'crm_changes'
/** A query filters on `column`, at its top or within $or / $and. */
const mentions = (query: Record<string, any>, column: string): boolean =>
  Object.entries(query).some(([key, value]) =>
    key === column || ((key === '$or' || key === '$and') && Array.isArray(value) && value.some((q) => q && typeof q === 'object' && mentions(q, column))))
/** The list builders joined to record_changes for their order alone: their count leaves the join out. */
const orderedByChanges = new WeakSet<Knex.QueryBuilder>()

/** Tables whose live rows per organization are counted by triggers (migration 20261121000900_record_counts). */
const MAINTAINED_COUNTS = new Set(['companies', 'contacts', 'deals', 'activities'])
/**
 * Tables whose live rows per organization and day of a date column are counted by triggers, and
 * the table of those counts (migration 20261125000100_activity_day_counts).
 */
const DAY_COUNTED: Record<string, { column: string; counts: string }> = { activities: { column: 'start_date', counts: 'activity_day_counts' } }
/** The conditions on a day-counted column that mean the same on the day counts' date column. */
const DAY_OPERATORS: Record<string, string> = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }

/**
 * The shared base of every resource stored in Postgres. On top of the Feathers Knex adapter:
 * qualified column names (safe with joins), soft delete, a stable sort (ties broken by id),
 * and single-statement writes (INSERT/UPDATE ... RETURNING instead of write-then-read).
 */
export class RecordService<
  Result extends Record<string, any> = any,
  Data = Partial<Result>,
  ServiceParams extends KnexAdapterParams<any> = KnexAdapterParams,
  PatchData = Partial<Data>
> extends KnexService<Result, Data, ServiceParams, PatchData> {
  declare options: RecordServiceOptions
  private wholeOrganizationCount?: string
  /** The named statements of the first page and of later pages (preparedPage), compiled once each. */
  private pageStatements = new Map<string, PageStatement | null>()
  /** The inline form of each set of list relations this service was asked for. */
  private inlineJoinColumns = new WeakMap<JoinSpec[], InlineJoins | null>()
  /** Where updated_at is read while createQuery builds a query joined to record_changes. */
  private updatedAtColumn?: string
  /** The table's columns, read once for wire pages. */
  private columns?: Promise<TableColumn[]>
  /** The wire statements of pages without relations. */
  private unjoinedWire: Pick<InlineJoins, 'wire' | 'textScope'> = { textScope: textScope(this) }
  /** Wire statements wrapping a named read (wireStatement): by projection, then by the read's text. */
  private wireStatements = new Map<string, Map<string, { name: string; text: string }>>()

  get table() {
    return this.options.name
  }

  get softDelete() {
    return this.options.softDelete !== false
  }

  get knex(): Knex {
    return this.options.Model
  }

  /**
   * The call's transaction when it runs in one (the factory's write transaction, or a caller's),
   * else the pool. A write opens its own transaction on this, so that it nests as a savepoint.
   */
  dbOf(params: { transaction?: { trx?: Knex.Transaction } } = {}): Knex {
    return params.transaction?.trx ?? this.knex
  }

  knexify(knexQuery: Knex.QueryBuilder, query: Record<string, any> = {}, parentKey?: string): Knex.QueryBuilder {
    const qualified: Record<string, any> = {}
    for (const [key, value] of Object.entries(query)) {
      if (!key.startsWith('$')) this.assertFilterable(key)
      qualified[key.startsWith('$') ? key : this.column(key)] = value
    }
    return super.knexify(knexQuery, qualified, parentKey)
  }

  private column(name: string) {
    return name === 'updated_at' && this.updatedAtColumn ? this.updatedAtColumn : qualify(this.table, name)
  }

  /** A query key that is not a declared column never reaches SQL (it would be a 500 there). */
  private assertFilterable(key: string) {
    const { filterable } = this.options
    if (!filterable || key.includes('.') || filterable.has(key)) return
    throw new BadRequest('Validation failed', { errors: { [key]: 'is not a field you can filter on' } })
  }

  /**
   * The scoped, live rows of this table matching params.query, before paging. An order on
   * updated_at, a filter on it or a keyset page ($after) reads updated_at from record_changes,
   * whose index (organization_id, table_name, updated_at, record_id) serves them: the tables
   * themselves keep no index on a column every write changes, so their updates stay HOT.
   */
  createQuery(params: ServiceParams = {} as ServiceParams) {
    const { filters, query } = this.filterQuery(params)
    const sort: Record<string, 1 | -1> = { ...(filters.$sort ?? {}) }
    const filtered = Boolean(params.after) || mentions(query, 'updated_at')
    const byChanges = CHANGE_LOGGED.has(this.table) && (filtered || Object.keys(sort)[0] === 'updated_at')
    // knexify, called by the adapter's createQuery, qualifies updated_at as this says.
    this.updatedAtColumn = byChanges ? `${CHANGES}.updated_at` : undefined
    let builder: Knex.QueryBuilder
    try {
      builder = super.createQuery({ ...params, query: { ...params.query, $sort: undefined } } as ServiceParams)
    } finally {
      this.updatedAtColumn = undefined
    }
    if (byChanges) {
      // On the organization too, so that the planner carries the organization's constant over to
      // record_changes and scans its index in order.
      builder.join(`record_changes as ${CHANGES}`, (on) =>
        on.on(`${CHANGES}.record_id`, `${this.table}.id`)
          .andOn(`${CHANGES}.organization_id`, `${this.table}.organization_id`)
          .andOnVal(`${CHANGES}.table_name`, this.table)
      )
      if (!filtered) orderedByChanges.add(builder)
    }
    const ordered = (column: string) =>
      byChanges && column === 'updated_at' ? `${CHANGES}.updated_at` : byChanges && column === 'id' ? `${CHANGES}.record_id` : qualify(this.table, column)
    if (this.softDelete && !params.withDeleted) builder.whereNull(`${this.table}.deleted_at`)
    if (params.after) {
      // A row comparison: one range of the record_changes index, whatever the page.
      const direction = Number(sort.updated_at) === -1 ? '<' : '>'
      builder.whereRaw(`(??, ??) ${direction} (?::timestamptz, ?)`, [ordered('updated_at'), ordered('id'), params.after.updated_at, params.after.id])
    }
    for (const filter of params.customFieldFilters ?? []) this.whereCustomFields(builder, filter)
    for (const [column, direction] of Object.entries(sort)) {
      builder.orderBy(ordered(column), Number(direction) === -1 ? 'desc' : 'asc')
    }
    if (!('id' in sort)) builder.orderBy(ordered('id'), Number(Object.values(sort)[0] ?? 1) === -1 ? 'desc' : 'asc')
    return builder
  }

  private whereCustomFields(builder: Knex.QueryBuilder, filter: CustomFieldFilter) {
    const column = `${this.table}.custom_fields`
    if ('anyOf' in filter) {
      builder.where((any) => {
        for (const values of filter.anyOf) any.orWhereRaw('?? @> ?::jsonb', [column, JSON.stringify(values)])
      })
      return
    }
    const matching = this.knex('custom_field_ranges')
      .select('record_id')
      .where({ organization_id: filter.organizationId, table_name: this.table, key: filter.key })
    for (const [operator, value] of filter.comparisons) matching.where(filter.column, operator, value as any)
    builder.whereIn(`${this.table}.id`, matching)
  }

  // Overloads of the adapter are collapsed to `any` here; callers get Paginated<Result> with paginate on.
  async _find(params: ServiceParams = {} as ServiceParams): Promise<any> {
    const joins = this.inlineJoins(params)
    const result = (this.answersAsWire(params, joins) && (await this.wirePage(params, joins))) || (await this.findRecords(params, joins))
    if (joins) joinedInline.add(result)
    return result
  }

  /**
   * The call may be answered as wire text (answerAsWire), on a Postgres server, and every relation
   * it attaches can be read in the page's statement.
   */
  private answersAsWire(params: ServiceParams, joins: InlineJoins | undefined) {
    return Boolean(params.asWire && this.options.wire && this.knex.client.config.client === 'pg' && !(params.listJoins && !joins))
  }

  /**
   * A page as the JSON texts of its records (wire-pages.ts), when the page has a compiled
   * statement and every relation it attaches can be read with the records; undefined otherwise,
   * and when a record holds a value the SQL does not format. The page statement selects the
   * page's keys and its total, and, for the unfiltered page, each record's version; the texts
   * come from the record texts where their version matches, and by key for the others
   * (wireRecordsOf). A page asked before is answered as it was kept where the change mark of the
   * tables it reads has not moved since (record-pages.ts): the mark is read first, then the page.
   */
  private async wirePage(params: ServiceParams, joins: InlineJoins | undefined): Promise<WirePage | undefined> {
    const { filters, paginate } = this.filterQuery(params)
    if (!(paginate && paginate.default) || !filters.$limit) return undefined
    const wire = await this.wireSqlOf(joins)
    const page = wire ? this.compiledPage(params, filters, joins, wire) : undefined
    if (!wire || !page) return undefined
    const { statement, values } = page
    const skip = filters.$skip || 0
    // The kept page of this statement and values, where its tables' mark has not moved since.
    const pages = recordPagesOf(this.knex)
    const { pageMark } = wire
    const scope = pageMark && `${pageMark.name} ${(params.query as Record<string, any>).organization_id}`
    const kept = pageMark && scope && pages.worthLooking(scope) ? { key: `${statement.id} ${JSON.stringify(values)}`, mark: await this.pageMarkOf(params, pageMark) } : undefined
    const hit = kept && pages.get(kept.key, kept.mark, scope)
    if (hit) return new WirePage({ total: hit.total, limit: filters.$limit, skip }, hit.records)
    const rows = await runStatement<PageKey>(this.knex, statement.name, statement.text, values)
    // An empty page past the end counts on its own: the usual path does it.
    if (rows.length === 0 && skip > 0) return undefined
    const records = await this.wireRecordsOf(params, joins, wire, rows)
    if (!records) return undefined
    const total = rows.length > 0 ? Number(rows[0][PAGE_TOTAL] ?? 0) : 0
    if (kept) pages.set(kept.key, kept.mark, total, records)
    return new WirePage({ total, limit: filters.$limit, skip }, records)
  }

  /** The change mark of the tables a page reads (WireSql.pageMark), for the call's organization. */
  private async pageMarkOf(params: ServiceParams, { name, text }: NamedText): Promise<string> {
    const [row] = await runStatement<{ crm_mark: string }>(this.knex, name, text, [(params.query as Record<string, any>).organization_id])
    return row.crm_mark
  }

  /**
   * The JSON texts of a page's records, in the page's order: `keys` are the page statement's rows
   * (each record's id, and its version where the statement read it; a filtered page's statement,
   * planned for its values, reads no more than its keys, whose versions are then read by key).
   * A record whose text the record texts hold for its version is not read again; the others are
   * read by key (wireRecordsByKey) and kept. Where the relations carry change marks, the versions
   * read first are the records' own parts with the relations' mark: a kept text last seen under
   * another mark has its relations' versions read by key before it is used (record-texts.ts).
   * The statements run one after the other, not in one snapshot: a record changed in between is
   * sent as it is now, and one deleted in between is left out (deleted_at is checked again: a
   * compiled page is always a list of live records). Undefined where a record holds a value the
   * SQL does not format.
   */
  private async wireRecordsOf(params: ServiceParams, joins: InlineJoins | undefined, wire: WireSql, keys: PageKey[]): Promise<Buffer[] | undefined> {
    if (keys.length === 0) return []
    const { marked } = wire
    const versions = keys[0].crm_version !== undefined ? keys
      : marked ? await this.byKey<PageKey>(params, marked.ownByKey, keys, 'own versions')
      : await this.byKey<PageKey>(params, wire.versionsByKey, keys, 'versions')
    const texts = recordTextsOf(this.knex)
    // Kept by organization and id: the primary key is (organization_id, id), and nothing of one
    // organization's may ever answer another's page.
    const scope = `${(joins ?? this.unjoinedWire).textScope}${(params.query as Record<string, any>).organization_id}:`
    const records: (Buffer | undefined)[] = []
    const unconfirmed: PageKey[] = []
    for (const key of versions) {
      const kept = marked ? texts.marked(scope + key.id, key.crm_version ?? null, key.crm_mark ?? null) : texts.get(scope + key.id, key.crm_version ?? null)
      if (kept === UNCONFIRMED) unconfirmed.push(key)
      records.push(kept === UNCONFIRMED ? undefined : kept)
    }
    if (unconfirmed.length > 0) {
      const confirmed = new Map<number, Buffer | undefined>()
      for (const key of await this.byKey<PageKey>(params, wire.versionsByKey, unconfirmed, 'versions')) {
        confirmed.set(key.id, texts.confirm(scope + key.id, key.crm_version ?? null, key.crm_mark ?? null))
      }
      versions.forEach((key, i) => (records[i] ??= confirmed.get(key.id)))
    }
    const missing = versions.filter((_, i) => records[i] === undefined)
    if (missing.length === 0) return records as Buffer[]
    const read = await this.wireRecordsByKey(params, wire, missing)
    if (!read) return undefined
    const byId = new Map(read.map((record) => [record.id, record]))
    const page: Buffer[] = []
    versions.forEach((key, i) => {
      // A record read neither here nor by key was deleted since the page's statement: left out.
      const kept = records[i]
      const record = kept ? undefined : byId.get(key.id)
      if (kept) page.push(kept)
      else if (record) {
        const text = Buffer.from(record.crm_wire)
        texts.set(scope + record.id, record.crm_version, text, record.crm_mark ?? null)
        page.push(text)
      }
    })
    return page
  }

  /**
   * Records by key with a wire statement ($1 the organization, $2 the ids, in order), named: the
   * statement does not depend on the page's filter, so every filtered list of a resource shares
   * it, and Postgres parses and plans it once per connection. Records deleted since, or of another
   * organization, are not there.
   */
  private byKey<T>(params: ServiceParams, text: string, keys: PageKey[], kind: string): Promise<T[]> {
    const organizationId = (params.query as Record<string, any>).organization_id
    // Padded with nulls (which match no row) to the rows Postgres assumes for an array it cannot
    // see: a plan for a shorter array would look cheaper than the generic plan, and Postgres would
    // plan every call again.
    const ids: (number | null)[] = keys.map((key) => key.id)
    while (ids.length < UNSEEN_ARRAY_ROWS) ids.push(null)
    return runStatement<T>(this.knex, nameOf(`crm ${kind} ${this.table}`, text), text, [organizationId, ids])
  }

  /**
   * The texts of records by key with the relations of the call, each with its id and the version
   * it was written from (one named statement per table, relations and scope: Postgres parses and
   * plans the wire projection once per connection). Undefined where a record holds a value the
   * SQL does not format.
   */
  private async wireRecordsByKey(params: ServiceParams, wire: WireSql, keys: PageKey[]): Promise<KeyedText[] | undefined> {
    if (keys.length === 0) return []
    const rows = await this.byKey<{ id: number; crm_wire: string | null; crm_version: string | null; crm_mark?: string | null }>(params, wire.textsByKey, keys, 'keyed')
    return rows.some((row) => typeof row.crm_wire !== 'string') ? undefined : (rows as KeyedText[])
  }

  /** The table's columns, read once (for wire statements). */
  private tableColumns() {
    return (this.columns ??= forgottenOnFailure(tableColumns(this.knex, this.table), () => (this.columns = undefined)))
  }

  /**
   * A named read wrapped in a wire projection (`SELECT <projection> FROM (<read>) AS page`) and
   * its statement name, built once per pair: a read by id or a sync page does not concatenate
   * and hash its few kilobytes of SQL again on every call.
   */
  private wireStatement(projection: string, read: string, kind: string) {
    let byRead = this.wireStatements.get(projection)
    if (!byRead) this.wireStatements.set(projection, (byRead = new Map()))
    let statement = byRead.get(read)
    if (!statement) {
      const text = wireWrapped(projection, read)
      byRead.set(read, (statement = { name: nameOf(kind, text), text }))
    }
    return statement
  }

  /**
   * A keyset page ($after) as wire text: the builder's statement (no total) wrapped the same way,
   * and `next` read from its last record. Undefined where wire pages do not apply. (Keyed as a
   * filtered page is, a page of 100 cost node more than it saved Postgres: measured, not kept;
   * a sync reads each record once, so its texts are not kept either.)
   * A sync's page, nothing asked but the organization, is named by its text: Postgres parses the
   * long projection once per connection (0.9 instead of 1.3 ms of its CPU for 100 contacts), and
   * any plan of it reads the change log's index from the cursor on. A filtered keyset page is
   * planned for its values, as a filtered page is.
   */
  private async wireKeysetPage(params: ServiceParams, builder: Knex.QueryBuilder, limit: number, joins: InlineJoins | undefined) {
    if (!this.answersAsWire(params, joins) || limit === 0 || params.knex || params.transaction?.trx) return undefined
    const wire = await this.wireSqlOf(joins)
    if (!wire) return undefined
    const { sql, bindings } = builder.clone().limit(limit).toSQL().toNative()
    const sync = !params.customFieldFilters?.length && Object.keys(params.query ?? {}).every((key) => SYNC_PAGE.has(key))
    const { name, text } = sync ? this.wireStatement(wire.projection, sql, `crm keyset ${this.table}`) : { name: undefined, text: wireWrapped(wire.projection, sql) }
    const rows = await runStatement<{ crm_wire: string | null }>(this.knex, name, text, bindings as unknown[])
    const records = wireTexts(rows)
    if (!records) return undefined
    const last = records.length > 0 ? JSON.parse(records[records.length - 1]) : undefined
    return new WirePage({ limit, skip: 0, next: last ? cursorOf(last) : null }, records)
  }

  /**
   * This service's wire statements with these relations (WireSql), built once the table's
   * columns are read; null where a column's type is not covered or the ids are not integers.
   */
  private wireSqlOf(joins: InlineJoins | undefined): Promise<WireSql | null> {
    const holder = joins ?? this.unjoinedWire
    return (holder.wire ??= forgottenOnFailure(this.readWireSql(joins), () => (holder.wire = undefined)))
  }

  private async readWireSql(joins: InlineJoins | undefined): Promise<WireSql | null> {
    const shape = this.options.wire!
    // What a page reads: its own table, its relations' and the definitions of its custom fields.
    const relations = joins ? relationTables(joins.specs) : { tenant: [], global: [] }
    const pageTables = { tenant: [...new Set([this.table, ...relations.tenant, ...(shape.customFields ? ['custom_fields'] : [])])], global: relations.global }
    // One read of the triggers: the page's tables include its relations'.
    const [columns, marked] = await Promise.all([this.tableColumns(), markedTables(this.knex, pageTables)])
    const allMarked = ({ tenant, global }: MarkedTables) => [...tenant, ...global].every((name) => marked.has(name))
    const covered = allMarked(relations)
    const pagesMarked = allMarked(pageTables)
    const projection = wireProjection(columns, shape, joins?.names ?? [])
    const idType = columns.find((column) => column.name === 'id')?.type
    if (!projection || !idType || !/^int[248]$/.test(idType)) return null
    const { own, version } = wireVersion(shape, this.table, joins?.versions)
    // A relation without a version of its own (inlineRelationVersions) has nothing a mark could stand for.
    const mark = joins && covered && joins.versions !== NO_VERSION ? (organization: string) => relationsMark(joins.specs, organization) : undefined
    const table = `"${this.table}"`
    const keyed = `FROM unnest($2::${idType}[]) WITH ORDINALITY AS crm_keys(id, position)
        JOIN ${table} ON ${table}.organization_id = $1 AND ${table}.id = crm_keys.id${this.softDelete ? ` AND ${table}.deleted_at IS NULL` : ''}`
    const withMark = mark ? `, ${mark('$1')} AS crm_mark` : ''
    return {
      projection,
      version,
      marked: mark && { own, mark, ownByKey: `SELECT ${table}.id, ${own} AS crm_version${withMark} ${keyed} ORDER BY crm_keys.position` },
      versionsByKey: `SELECT ${table}.id, ${version} AS crm_version${withMark} ${keyed} ORDER BY crm_keys.position`,
      // Not for relations computed from other tables than their own (they have no version).
      pageMark: pagesMarked && joins?.versions !== NO_VERSION ? this.pageMarkStatement(pageTables) : undefined,
      textsByKey: `SELECT ${projection}, page.id, page.crm_version${mark ? ', page.crm_mark' : ''} FROM (SELECT ${table}.*${joins ? `, ${joins.select}` : ''}, ${version} AS crm_version${withMark}, crm_keys.position AS crm_position
        ${keyed}) AS page
      ORDER BY page.crm_position`
    }
  }

  /** The named statement reading the change mark of a page's tables (record-pages.ts). */
  private pageMarkStatement(tables: MarkedTables): NamedText {
    const text = `SELECT ${changeMark(tables, '$1')} AS crm_mark`
    return { name: nameOf(`crm page mark ${this.table}`, text), text }
  }

  /** A list page, or the records of an unpaginated list, with `joins` as columns of its statement. */
  private async findRecords(params: ServiceParams, joins: InlineJoins | undefined): Promise<any> {
    const { filters, paginate } = this.filterQuery(params)
    const paginated = Boolean(paginate && paginate.default)
    const page = { limit: filters.$limit, skip: filters.$skip || 0 }
    const prepared = paginated ? this.preparedPage(params, filters, joins) : undefined
    if (prepared) {
      const rows: Record<string, any>[] = await prepared
      // An empty page past the end counts on its own: the builder below does it.
      if (rows.length > 0 || page.skip === 0) return { total: await carriedTotal(rows, PAGE_TOTAL, 0), ...page, data: rows as Result[] }
    }
    const builder = params.knex ? params.knex.clone() : this.createQuery(params)
    if (joins) builder.select(this.knex.raw(joins.select))
    const types = typesFor(params, this.knex)
    if (types) builder.options({ types })
    if (params.after) return (paginated && (await this.wireKeysetPage(params, builder, filters.$limit, joins))) || this.keysetPage(builder, filters.$limit, paginated)
    const countQuery = paginated ? this.countQuery(builder, params) : undefined
    paged(builder, filters)
    if (!countQuery) return filters.$limit === 0 ? [] : await builder
    if (filters.$limit === 0) return { total: Number((await countQuery)[0]?.total ?? 0), ...page, data: [] }
    // The page carries its total in one statement (an uncorrelated scalar subquery, run once),
    // one round trip instead of two; only a page past the end counts on its own.
    const rows: Record<string, any>[] = await builder.select(countQuery.as(PAGE_TOTAL))
    const total = await carriedTotal(rows, PAGE_TOTAL, page.skip, countQuery)
    return { total, ...page, data: rows as Result[] }
  }

  /**
   * A keyset page ($after): no total (counting the rest of a million-row sync would cost more
   * than the page), and `next`, the cursor of its last record, to pass as the next $after.
   * The sync has caught up when a page holds fewer than $limit records.
   */
  private async keysetPage(builder: Knex.QueryBuilder, limit: number, paginate: boolean) {
    const data: Record<string, any>[] = limit === 0 ? [] : await builder.limit(limit)
    if (!paginate) return data as Result[]
    const last = data[data.length - 1]
    return { limit, skip: 0, next: last ? cursorOf(last) : null, data: data as Result[] }
  }

  /**
   * The exact total of a list. When it is the count of one organization's live rows of a large
   * table, it is read from the trigger-maintained record_counts (a few rows) instead of counting
   * every row; any other filter, join or prepared builder is counted on the table as before.
   */
  countQuery(builder: Knex.QueryBuilder, params: ServiceParams) {
    const count = builder.clone().clearSelect().clearOrder().count({ total: '*' })
    // Joined for the order only: every row has its one record_changes row, so the count is the same
    // without it (unless a caller joined something else too: then the count keeps every join).
    const joins = ((builder as any)._statements as { grouping: string }[]).filter((statement) => statement.grouping === 'join')
    if (orderedByChanges.has(builder) && joins.length === 1) count.clear('join')
    if (!this.softDelete || !MAINTAINED_COUNTS.has(this.table)) return count
    const { sql, bindings } = count.toSQL()
    // The canonical query's SQL does not change: compiled once per service.
    const wholeOrganization = (this.wholeOrganizationCount ??= this.knex(this.table)
      .where(`${this.table}.organization_id`, 0)
      .whereNull(`${this.table}.deleted_at`)
      .count({ total: '*' })
      .toSQL().sql)
    const db = params.transaction?.trx ?? this.knex
    if (sql === wholeOrganization && bindings.length === 1 && typeof bindings[0] === 'number') {
      return db('record_counts').where({ organization_id: bindings[0], table_name: this.table }).sum({ total: 'live' })
    }
    return this.dayCount(db, sql, bindings, params.query) ?? count
  }

  /**
   * The count of one organization's live rows with a day-counted date in a range (a calendar's
   * week), summed from the trigger-maintained day counts instead of counted row by row: only
   * when the count's SQL is exactly that of the organization and the date conditions (compared
   * with the same query built alone), so any other filter, join or prepared builder counts on
   * the table. The day column has the date column's type, so each condition means the same there.
   */
  private dayCount(db: Knex, sql: string, bindings: readonly unknown[], query: Record<string, any> = {}) {
    const counted = DAY_COUNTED[this.table]
    const range = counted && query[counted.column]
    const organization = query.organization_id
    if (!range || !Number.isSafeInteger(organization)) return undefined
    const conditions: [string, unknown][] = typeof range === 'string' ? [['=', range]] : Object.entries(range).map(([key, value]) => [DAY_OPERATORS[key], value])
    if (conditions.some(([operator, value]) => !operator || typeof value !== 'string')) return undefined
    const alone = Object.fromEntries(Object.entries(query).filter(([key]) => key === 'organization_id' || key === counted.column))
    const canonical = this.knexify(this.knex(this.table), alone).whereNull(`${this.table}.deleted_at`).count({ total: '*' }).toSQL()
    if (canonical.sql !== sql || canonical.bindings.length !== bindings.length || canonical.bindings.some((value, i) => value !== bindings[i])) return undefined
    const sum = db(counted.counts).where('organization_id', organization)
    for (const [operator, value] of conditions) sum.where('day', operator, value as string)
    return sum.sum({ total: 'live' })
  }

  async _get(id: Id, params: ServiceParams = {} as ServiceParams): Promise<Result> {
    const named = this.namedGet(id, params)
    const wire = named && this.answersGetAsWire(params) ? await this.wireGet(id, named) : undefined
    if (wire) return wire as unknown as Result
    const row = named ? (await runStatement<Result>(this.knex, named.name, named.text, named.values, typesFor(params, this.knex)))[0] : await this.builtGet(id, params)
    if (!row) throw notFound(id)
    return row
  }

  /**
   * A read by id may be answered as wire text (answerAsWire) when this class reads it: a subclass
   * that overrides get or _get may read the record's fields, so it gets the record.
   */
  private answersGetAsWire(params: ServiceParams) {
    if (!params.asWire || !this.options.wire) return false
    // On the class: Feathers' hooks wrap the registered service's own methods.
    const own = this.constructor.prototype as RecordService
    return own._get === RecordService.prototype._get && own.get === KnexService.prototype.get
  }

  /**
   * The record as the JSON text Postgres writes for it (wire-pages.ts): the named read by id
   * wrapped as a wire page's rows are, and named by its text, which depends on the service's wire
   * shape as well as the table. Undefined where a value falls outside what the SQL formats (the
   * usual read follows).
   */
  private async wireGet(id: Id, read: NamedStatement): Promise<WireRecord | undefined> {
    const wire = await this.wireSqlOf(undefined)
    if (!wire) return undefined
    const { name, text } = this.wireStatement(wire.projection, read.text, `${read.name} wire`)
    const [row] = await runStatement<{ crm_wire: string | null }>(this.knex, name, text, read.values)
    if (!row) throw notFound(id)
    return typeof row.crm_wire === 'string' ? new WireRecord(row.crm_wire) : undefined
  }

  private builtGet(id: Id, params: ServiceParams) {
    const query = this.createQuery(params).andWhere(`${this.table}.id`, id).first()
    const types = typesFor(params, this.knex)
    return types ? query.options({ types }) : query
  }

  /**
   * The hottest read, a live record by id within the caller's organizations and nothing else
   * asked, as a named statement on a Postgres server: parsed once per connection and, for one
   * organization, planned once (see below), then only bound and executed; no query builder per request. The same SQL and rows as
   * the builder's; any other query, a transaction, the embedded database or a service with its
   * own createQuery take the builder.
   */
  private namedGet(id: Id, params: ServiceParams): NamedStatement | undefined {
    if (!this.servesNamed(params)) return undefined
    const query: Record<string, any> = params.query ?? {}
    // sanitizeQuery adds the paging filters, which mean nothing to a read by primary key.
    for (const key in query) if (key !== 'organization_id' && !PAGING.has(key) && query[key] !== undefined) return undefined
    const scope = query.organization_id
    const organizations: unknown[] | undefined = typeof scope === 'number'
      ? [scope]
      : scope && typeof scope === 'object' && Array.isArray(scope.$in) && Object.keys(scope).length === 1 ? scope.$in : undefined
    if (!organizations?.length || !organizations.every((value) => Number.isSafeInteger(value))) return undefined
    const one = organizations.length === 1
    const live = this.softDelete ? ' AND deleted_at IS NULL' : ''
    // One organization (an API key's, or a token's named one) is compared with =: Postgres plans a
    // named statement for its values until a plan for any value looks as cheap, and `= ANY($1)` of
    // an array it cannot see never does, so every read was planned again (0.1-0.2 ms of its CPU).
    return {
      name: `crm get ${this.table}${live ? ' live' : ''}${one ? '' : ' in'}`,
      text: `SELECT * FROM "${this.table}" WHERE organization_id = ${one ? '$1' : 'ANY($1)'} AND id = $2${live} LIMIT 1`,
      values: [one ? organizations[0] : organizations, id]
    }
  }

  /**
   * A statement of the service's own text (`$1`, `$2`… may repeat), named on a Postgres server
   * outside a transaction: parsed once per connection, and planned once where Postgres finds its
   * generic plan as cheap as one for the values. Elsewhere (the embedded database, a call's
   * transaction) the same text goes through knex.
   */
  protected async ownStatement<T>(name: string, text: string, values: unknown[], params: ServiceParams): Promise<T[]> {
    const db = this.dbOf(params)
    if (db === this.knex && db.client.config.client === 'pg') return runStatement<T>(db, name, text, values, typesFor(params, db))
    const bindings = [...text.matchAll(/\$(\d+)/g)].map((match) => values[Number(match[1]) - 1])
    return (await db.raw(text.replace(/\$\d+/g, '?'), bindings as Knex.RawBinding[])).rows as T[]
  }

  /**
   * Whether a read may go as a named statement: nothing asked besides the query (no prepared
   * builder, adapter options, transaction, deleted rows, cursor or custom-field filter), on a Postgres server, by
   * a service that builds its reads the common way (a channel's view of a shared table narrows
   * them itself and keeps the builder).
   */
  private servesNamed(params: ServiceParams) {
    if (params.knex || params.adapter || params.transaction?.trx || this.knex.client.config.client !== 'pg' || this.options.schema) return false
    if (params.withDeleted || params.after || params.customFieldFilters?.length) return false
    return this.createQuery === RecordService.prototype.createQuery && this.knexify === RecordService.prototype.knexify
  }

  /**
   * A page of a list with its total, from a statement compiled once per shape of list query (its
   * filters, operators, order and columns, with each value replaced by a stand-in) instead of a
   * query builder per request: the SQL is the builder's own, so the rows, the order and the total
   * (record_counts, the day counts or a count) are those of the builder's path. The unfiltered
   * page, the list everybody opens first, is a named statement, parsed and planned once per
   * connection; a filtered page is sent unnamed and planned for its values, as the builder's
   * statements are (a plan made once for any value could read a whole organization for a rare one).
   * A wire page's statement selects only the keys (wireRecordsOf reads the records).
   */
  private preparedPage(params: ServiceParams, filters: { $limit: number; $skip?: number }, joins?: InlineJoins): Promise<Record<string, any>[]> | undefined {
    const page = this.compiledPage(params, filters, joins)
    return page && runStatement(this.knex, page.statement.name, page.statement.text, page.values, typesFor(params, this.knex))
  }

  /** The page statement of the call's list shape (pageStatement) and the call's values for it, where it has one. */
  private compiledPage(params: ServiceParams, filters: { $limit: number; $skip?: number }, joins?: InlineJoins, wire?: WireSql) {
    if (!filters.$limit || !this.servesNamed(params)) return undefined
    const query: Record<string, any> = params.query ?? {}
    if (!Number.isSafeInteger(query.organization_id)) return undefined
    const shape = shapeOf(query)
    if (!shape) return undefined
    const skip = filters.$skip || 0
    const statement = this.pageStatement(shape, skip > 0, params, joins, wire)
    if (!statement) return undefined
    const values = statement.values.map((value) =>
      value === LIMIT ? filters.$limit : value === SKIP ? skip : value instanceof FilterValue ? shape.values[value.index] : value)
    return { statement, values }
  }

  private pageStatement(shape: Shape, later: boolean, like: ServiceParams, joins?: InlineJoins, wire?: WireSql): PageStatement | null {
    const statements = joins?.pageStatements ?? this.pageStatements
    const key = `${wire ? 'wire ' : ''}${later ? 'later' : 'first'} ${shape.key}`
    const known = statements.get(key)
    if (known !== undefined) return known
    if (statements.size >= MAX_PAGE_STATEMENTS) return null
    const params = {
      paginate: like.paginate,
      query: { ...shape.standIn, $limit: STAND_IN.limit, ...(later ? { $skip: STAND_IN.skip } : {}) }
    } as unknown as ServiceParams
    // Named only when nothing but the organization is asked (a plan for any organization is that plan).
    const filtered = Object.entries(shape.standIn).some(([field, value]) => field !== 'organization_id' && value !== undefined)
    let compiled: { sql: string; bindings: readonly unknown[] }
    let filters: { $limit: number }
    try {
      filters = this.filterQuery(params).filters
      const builder = this.createQuery(params)
      const count = this.countQuery(builder, params)
      // A wire page's statement selects the page's keys, not its records (wireRecordsOf): the
      // unfiltered page with each record's version (or its own part and the relations' mark,
      // read once for the statement), a filtered one, planned for its values, only the ids its
      // index gives.
      if (wire) {
        builder.clearSelect().select(`${this.table}.id`)
        if (!filtered && wire.marked) {
          builder.select(this.knex.raw(`${wire.marked.own} AS crm_version`))
          // The organization's stand-in as the mark's binding (none where the relations are all global).
          const mark = wire.marked.mark('?')
          builder.select(this.knex.raw(`${mark} AS crm_mark`, mark.includes('?') ? [shape.standIn.organization_id] : []))
        } else if (!filtered) builder.select(this.knex.raw(`${wire.version} AS crm_version`))
      } else if (joins) builder.select(this.knex.raw(joins.select))
      compiled = paged(builder, filters).select(count.as(PAGE_TOTAL)).toSQL().toNative()
    } catch {
      // A list the service cannot build this way (it refuses the filter) keeps the builder.
      statements.set(key, null)
      return null
    }
    const { bindings, sql } = compiled
    const values = bindings.map((binding) => slotOf(binding, shape.values.length))
    const filled = new Set(values.flatMap((value) => (value instanceof FilterValue ? [value.index] : [])))
    const times = (slot: Slot) => values.filter((value) => value === slot).length
    // Every value of the call goes somewhere, as itself, the text holds none of them, and the
    // $limit and $skip are told apart from any constant (each appears exactly once).
    const understood = filters.$limit === STAND_IN.limit && !values.includes(null) && filled.size === shape.values.length && !sql.includes(STAND_IN.text) &&
      times(LIMIT) === 1 && times(SKIP) === (later ? 1 : 0)
    const statement = understood ? { id: ++pageStatementCount, name: filtered ? undefined : nameOf(`crm page ${this.table}`, sql), text: sql, values } : null
    statements.set(key, statement)
    return statement
  }

  /**
   * The list relations the call asks for (params.listJoins, set by the resource's join hook) as
   * columns of the list's own statement: one statement and one round trip for a joined page, where
   * loading them after the page costs a second (joins.ts batches them into one). Only for lists
   * this class builds itself (no prepared builder, no createQuery or knexify of a subclass, which
   * may alias the table) and relations to other tables; otherwise the hook loads them in a batch.
   */
  private inlineJoins(params: ServiceParams): InlineJoins | undefined {
    const specs = params.listJoins
    if (!specs || params.knex) return undefined
    if (this.createQuery !== RecordService.prototype.createQuery || this.knexify !== RecordService.prototype.knexify) return undefined
    let inline = this.inlineJoinColumns.get(specs)
    if (inline === undefined) {
      const select = inlineRelationsSelect(specs, this.table)
      inline = select === null ? null : {
        select, names: specs.map((spec) => spec.as), versions: inlineRelationVersions(specs, this.table), specs, pageStatements: new Map(), textScope: textScope(this)
      }
      this.inlineJoinColumns.set(specs, inline)
    }
    return inline ?? undefined
  }

  /** One INSERT ... RETURNING, of one record or of a batch (answered in input order). */
  async _create(data: any, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (!Array.isArray(data)) {
      const [row] = await this.db(params).insert(data).returning('*')
      return row as Result
    }
    const rows: Result[] = await this.db(params).insert(data).returning('*')
    // The ids of one INSERT come from the sequence in VALUES order.
    return rows.sort((a, b) => Number(a.id) - Number(b.id))
  }

  /**
   * The batch upsert, in one transaction and three statements whatever the number of records:
   * a transaction-level advisory lock on every key (sorted, so concurrent batches queue instead
   * of deadlocking), the match of every key against the live records (locked FOR UPDATE), and
   * one INSERT ... ON CONFLICT (organization_id, id) DO UPDATE where a matched record carries
   * its id. A concurrent upsert of the same key waits for the lock and then sees this one's
   * record, so one key never makes two records. Answers the rows in input order and whether
   * each was created.
   */
  async upsertRows(keyName: string, records: UpsertRecord[], params: ServiceParams = {} as ServiceParams) {
    const key = this.options.upsertKeys?.[keyName]
    if (!key) throw new BadRequest('Validation failed', { errors: { idProperty: `must be one of: ${Object.keys(this.options.upsertKeys ?? {}).join(', ')}` } })
    const organizationId = records[0].row.organization_id
    const values = records.map(({ row }) => key.value(row)) as string[]
    const missing: Record<string, Record<string, string>> = {}
    values.forEach((value, index) => {
      if (value === null || value === undefined || value === '') missing[index] = { [key.field]: `is required to upsert by ${keyName}` }
    })
    if (Object.keys(missing).length) throw new BadRequest('Invalid records', { errors: missing })

    const run = async (trx: Knex.Transaction) => {
      const table = this.table
      await trx.raw(
        `SELECT pg_advisory_xact_lock(hashtextextended(? || s.k, 0)) FROM (SELECT DISTINCT ${key.sent('i.k')} AS k FROM unnest(?::text[]) AS i(k) ORDER BY 1) AS s`,
        [`${table}:${keyName}:${organizationId}:`, values]
      )
      const { rows: matches } = await trx.raw(
        `SELECT i.ord AS batch_ord, ${key.sent('i.k')} AS batch_key, m.* FROM unnest(?::text[]) WITH ORDINALITY AS i(k, ord)
         LEFT JOIN LATERAL (
           SELECT * FROM ?? AS t WHERE t.organization_id = ? AND t.deleted_at IS NULL AND ${key.matches('i.k')}
           ORDER BY t.id LIMIT 1 FOR UPDATE
         ) AS m ON true ORDER BY i.ord`,
        [values, table, organizationId]
      )
      this.refuseRepeatedKeys(matches.map((match: any) => match.batch_key), key.field)
      const columns = [...new Set(records.flatMap(({ row }) => Object.keys(row)))].filter((column) => column !== 'id')
      const rows = records.map(({ row, sent }, index) => {
        const stored = matches[index].id === null ? undefined : matches[index]
        return stored ? this.mergedWithStored(row, sent, stored, columns) : row
      })
      const insert = trx(table).insert(rows).toSQL()
      const changed = columns.filter((column) => !KEPT_ON_MATCH.has(column))
      const written: Result[] = (await trx.raw(
        `${insert.sql} ON CONFLICT (organization_id, id) DO UPDATE SET ${changed.map(() => '?? = EXCLUDED.??').join(', ')}${changed.length ? ', ' : ''}updated_at = now() RETURNING *`,
        [...insert.bindings, ...changed.flatMap((column) => [column, column])]
      )).rows
      return this.inInputOrder(written, matches.map((match: any) => match.id))
    }
    return params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run)
  }

  /** The upsert custom method: its records prepared by the batch hooks (batch-writes.ts). */
  async upsert(data: { idProperty: string; records: UpsertRecord[] }, params: ServiceParams = {} as ServiceParams) {
    const written = await this.upsertRows(data.idProperty, data.records, params)
    params.batchEvents = written.map(({ created }) => (created ? 'created' : 'patched'))
    const created = written.filter((record) => record.created).length
    return { created, updated: written.length - created, data: written.map(({ row }) => row) }
  }

  /**
   * The batch-update custom method: each record's prepared changes written by the service's own
   * _patch (so every resource's write rules apply unchanged), in one transaction.
   */
  async 'batch-update'(data: { organization_id: number; records: { id: number; changes: PatchData }[] }, params: ServiceParams = {} as ServiceParams) {
    const run = async (trx: Knex.Transaction) => {
      const scoped = { ...params, query: { organization_id: data.organization_id }, transaction: { trx } } as ServiceParams
      const rows: Result[] = []
      for (const { id, changes } of data.records) rows.push(await this._patch(id, changes, scoped))
      return rows
    }
    const rows = await (params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run))
    params.batchEvents = rows.map(() => 'patched')
    return rows
  }

  /** The batch-delete custom method (see removeRows). */
  async 'batch-delete'(data: { organization_id: number; ids: number[] }, params: ServiceParams = {} as ServiceParams) {
    const rows = await this.removeRows(data.organization_id, data.ids, params)
    params.batchEvents = rows.map(() => 'removed')
    return rows
  }

  /** Two records of one batch with the same key would write one record twice: a 400 naming the later one. */
  private refuseRepeatedKeys(keys: (string | null)[], field: string) {
    const first = new Map<string, number>()
    const errors: Record<string, Record<string, string>> = {}
    keys.forEach((key, index) => {
      if (key === null) return
      if (first.has(key)) errors[index] = { [field]: `is the same key as record ${first.get(key)}'s` }
      else first.set(key, index)
    })
    if (Object.keys(errors).length) throw new RepeatedKeys(errors)
  }

  /** A matched record's row: the columns the client sent, the stored values elsewhere, custom fields merged. */
  private mergedWithStored(row: Record<string, any>, sent: string[], stored: Record<string, any>, columns: string[]) {
    const merged: Record<string, unknown> = { id: stored.id, organization_id: stored.organization_id }
    for (const column of columns) {
      if (column === 'organization_id') continue
      merged[column] = sent.includes(column) ? row[column] : storedValue(stored[column])
    }
    if (sent.includes('custom_fields') && typeof row.custom_fields === 'string') {
      merged.custom_fields = JSON.stringify({ ...(stored.custom_fields ?? {}), ...JSON.parse(row.custom_fields) })
    }
    return merged
  }

  /** Written rows back in input order: a matched record by its id, the created ones in id (VALUES) order. */
  private inInputOrder(written: Result[], matchedIds: (number | null)[]) {
    const byId = new Map(written.map((row) => [Number(row.id), row]))
    const matched = new Set(matchedIds.filter((id) => id !== null).map(Number))
    const created = written.filter((row) => !matched.has(Number(row.id))).sort((a, b) => Number(a.id) - Number(b.id))
    let next = 0
    return matchedIds.map((id) => (id === null ? { row: created[next++], created: true } : { row: byId.get(Number(id))!, created: false }))
  }

  /**
   * Soft-deletes live records of one organization by id, with their declared dependants, in one
   * transaction and a constant number of statements; all or nothing: an id that is not a live
   * record of the organization is a 404 naming the first such id, and nothing is deleted.
   */
  async removeRows(organizationId: number, ids: number[], params: ServiceParams = {} as ServiceParams): Promise<Result[]> {
    const run = async (trx: Knex.Transaction) => {
      const write = trx(this.table).where({ organization_id: organizationId }).whereIn('id', ids)
      const rows: Result[] = this.softDelete
        ? await write.whereNull('deleted_at').update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('*')
        : await write.delete().returning('*')
      this.assertAllFound(ids, rows)
      if (this.softDelete && rows.length > 0) {
        const deletedAt = rows[0].deleted_at
        for (const { table, column } of this.options.softDeleteCascade ?? []) {
          await trx(table).where({ organization_id: organizationId }).whereIn(column, ids).whereNull('deleted_at')
            .update({ deleted_at: deletedAt, updated_at: deletedAt })
        }
      }
      const byId = new Map(rows.map((row) => [Number(row.id), row]))
      return ids.map((id) => byId.get(Number(id))!)
    }
    return params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run)
  }

  /** The live rows of one organization with these ids, in the order of the ids; 404 naming the first id missing. */
  async liveRows(organizationId: number, ids: number[], params: ServiceParams = {} as ServiceParams): Promise<Result[]> {
    const rows: Result[] = await this.db(params).where({ organization_id: organizationId }).whereIn('id', ids).whereNull('deleted_at')
    this.assertAllFound(ids, rows)
    const byId = new Map(rows.map((row) => [Number(row.id), row]))
    return ids.map((id) => byId.get(Number(id))!)
  }

  private assertAllFound(ids: number[], rows: Result[]) {
    const found = new Set(rows.map((row) => Number(row.id)))
    const missing = ids.find((id) => !found.has(Number(id)))
    if (missing !== undefined) throw notFound(missing)
  }

  /** One UPDATE ... RETURNING on the live, scoped row (or rows, for an explicit multi patch). */
  async _patch(id: NullableId, data: PatchData, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (id === null && !this.allowsMulti('patch', params)) throw new MethodNotAllowed('Can not patch multiple entries')
    const changes: Record<string, unknown> = { ...(data as any), updated_at: this.knex.fn.now() }
    delete changes.id
    const rows = await this.scopedWrite(id, params).update(changes).returning('*')
    if (id !== null) {
      if (rows.length !== 1) throw notFound(id)
      return rows[0] as Result
    }
    return rows as Result[]
  }

  /**
   * Soft delete: deleted_at and updated_at set to the same instant, the record returned. The
   * declared dependants (softDeleteCascade) are soft-deleted at that instant in the same transaction.
   */
  async _remove(id: NullableId, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Can not remove multiple entries')
    const cascade = this.softDelete ? this.options.softDeleteCascade ?? [] : []
    if (cascade.length > 0 && !params.transaction?.trx) {
      return this.knex.transaction((trx) => this._remove(id, { ...params, transaction: { trx } }))
    }
    const write = this.scopedWrite(id, params)
    const rows = this.softDelete
      ? await write.update({ deleted_at: this.knex.fn.now(), updated_at: this.knex.fn.now() }).returning('*')
      : await write.delete().returning('*')
    if (rows.length !== 1) throw notFound(id)
    const record = rows[0]
    const db = params.transaction?.trx ?? this.knex
    for (const { table, column } of cascade) {
      await db(table)
        .where({ organization_id: record.organization_id, [column]: record.id })
        .whereNull('deleted_at')
        .update({ deleted_at: record.deleted_at, updated_at: record.deleted_at })
    }
    return record as Result
  }

  /**
   * The `search` custom method of catalogue-like resources: a case-insensitive partial match of
   * the term on any of the columns (each served by a trigram index on lower(column)), live rows of
   * one organization, ordered by `orderBy` then id.
   */
  async searchColumns(
    search: { searchTerm: string; organization_id?: number; $limit?: number; $skip?: number },
    columns: string[],
    orderBy = 'name'
  ): Promise<SearchPage<Result>> {
    const pattern = containsPattern(search.searchTerm)
    const matches = this.knex(this.table)
      .where('organization_id', search.organization_id!)
      .whereNull('deleted_at')
      .where((q) => {
        for (const column of columns) q.orWhereRaw('lower(??) LIKE ?', [column, pattern])
      })
    return this.searchPage(matches, [orderBy], search)
  }

  /**
   * The answer of every `search` custom method: one page of the matching live rows in the list
   * envelope, ordered by `order` then id. The page is sorted over every match anyway, so the
   * exact total comes from the same pass (a window count) instead of a second statement that
   * would visit every match again; only a page past the end needs a separate count.
   */
  async searchPage(matches: Knex.QueryBuilder, order: string[], page: { $limit?: number; $skip?: number }): Promise<SearchPage<Result>> {
    const limit = page.$limit ?? 10
    const skip = page.$skip ?? 0
    const rows: Record<string, any>[] = await matches.clone()
      .select(`${this.table}.*`, this.knex.raw('count(*) OVER () AS search_total'))
      .orderBy([...order.map((column) => ({ column })), { column: 'id' }])
      .limit(limit)
      .offset(skip)
    const total = await carriedTotal(rows, 'search_total', skip, matches.clone().count({ total: '*' }))
    return { total, limit, skip, data: rows as Result[] }
  }

  /** A write statement restricted to the live rows matching params.query (and id). */
  scopedWrite(id: NullableId, params: ServiceParams) {
    const { query } = this.filterQuery(params)
    const builder = this.db(params)
    this.knexify(builder, query)
    if (this.softDelete) builder.whereNull(`${this.table}.deleted_at`)
    if (id !== null) builder.where(`${this.table}.id`, id)
    return builder
  }
}
