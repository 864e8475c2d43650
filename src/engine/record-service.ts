import { KnexService } from '@feathersjs/knex'
import type { KnexAdapterOptions, KnexAdapterParams } from '@feathersjs/knex'
import { BadRequest, MethodNotAllowed, NotFound } from '@feathersjs/errors'
import type { Id, NullableId } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { preparedRows, databaseOf } from '../db.js'
import { isCitus, routed } from './citus.js'
import { searchQueries } from './search.js'
import type { SearchRule } from './search.js'
import { ReadModel } from './read-model.js'
import type { ReadModelDeclaration, ReadShape, Statement } from './read-model.js'
import type { CustomFieldFilter } from './read-request.js'
import { RenderedAnswer } from './rendered-answer.js'
import { CsvAnswer, csvOfList } from './csv-export.js'
import { requireTriggerFamilies } from './trigger-families.js'
import type { TriggerFamily } from './trigger-families.js'
import { matchRows, upsertRows } from './upsert.js'
import { WriteGuardsFailed, allHold, guardedInsert, guardsOf } from './write-guards.js'
import type { GuardedWriter } from './write-guards.js'
import type { UpsertKey, UpsertRecord } from './upsert.js'

export type { UpsertKey, UpsertRecord }
export { RepeatedKeys } from './upsert.js'

/** Rows of another table that live and die with a record: deleting the record soft-deletes them. */
export interface SoftDeleteCascade {
  table: string
  /** The column of `table` that holds the record's id. */
  column: string
  /** The path of the service these rows belong to, whose removed events they send; `{column}` stands for the row's value ('conversation-messages-{channel}'). */
  path: string
}

/** A dependant a delete soft-deleted (softDeleteCascade): the stored row, and the path of its service. */
export interface CascadedRow {
  path: string
  record: Record<string, any>
}

/** The one organization a call's query is restricted to, if it is one. */
const organizationOf = (params: { query?: Record<string, any> }) => {
  const organization = params.query?.organization_id
  const one = typeof organization === 'object' && organization !== null ? (organization.$in?.length === 1 ? organization.$in[0] : undefined) : organization
  return one === undefined || one === null ? undefined : Number(one)
}

/** The service path of a cascaded row: the declared path with each `{column}` replaced by the row's value. */
const cascadedPathOf = (path: string, row: Record<string, any>) => path.replace(/\{(\w+)\}/g, (_match, column: string) => String(row[column]))

export interface RecordServiceOptions extends KnexAdapterOptions {
  /** DELETE sets deleted_at instead of removing the row, and deleted rows disappear from every read. */
  softDelete?: boolean
  /** Deleting a record soft-deletes these dependants at the same instant, in the same transaction. */
  softDeleteCascade?: SoftDeleteCascade[]
  /** Conditions every row of the service meets (a channel's messages): equality on columns, fixed for the service. */
  where?: Record<string, string | number | boolean>
  /** The columns a query may filter on (set by the resource factory from the query schemas). */
  filterable?: ReadonlySet<string>
  /** The keys a batch upsert may match records by (set by the resource factory from the declaration). */
  upsertKeys?: Record<string, UpsertKey>
  /**
   * How reads write the records: the schema of what is sent, and what is computed or hidden (set
   * by the resource factory from its declaration; a service registered otherwise declares it).
   */
  read?: Omit<ReadModelDeclaration, 'table' | 'softDelete'>
  /**
   * Columns that are secrets shown once (secret-fields.ts): never read, but a write that sets one
   * (a new webhook signing secret) answers with the value it wrote.
   */
  secretFields?: readonly string[]
  /**
   * The trigger families the table relies on (trigger-families.ts), checked at start-up. With
   * record_counts, an organization's whole list has its exact total without counting its rows.
   */
  triggerFamilies?: TriggerFamily[]
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** Set around a delete by the resource factory: the dependants the delete soft-deleted, for their events. */
    cascaded?: CascadedRow[]
    /**
     * A batch create or upsert that checks every record as it would write it (the whole chain of
     * hooks, the keys matched) but writes nothing: an import's preview (src/services/crm/imports). A batch
     * create answers [], an upsert {created, updated, data} with data the matched ids ({id: null}
     * for a record it would create).
     */
    dryRun?: boolean
  }
}

/** A page of search matches: the spec's list envelope, and whether its total stopped at the cap (search.ts). */
export interface SearchEnvelope<T> {
  total: number
  total_capped: boolean
  limit: number
  skip: number
  data: T[]
}

/** What every `search` custom method is sent besides its own fields. */
export interface SearchTerms {
  searchTerm: string
  organization_id?: number
  $limit?: number
  $skip?: number
}

const notFound = (id: Id) => new NotFound(`No record found for id '${id}'`)
const qualify = (table: string, column: string) => (column.includes('.') ? column : `${table}.${column}`)
const COMPARISONS = new Set(['>', '>=', '<', '<='])
const PAGING = new Set(['$limit', '$skip', '$sort', '$select'])

/**
 * The shared base of every table-backed service: Feathers' knex adapter with soft delete,
 * tenant-safe filters, keyset pages and batch writes, and one read path. Every list and every read
 * by id is one statement in which Postgres writes the answer as JSON in the API's shape (read-model.ts);
 * a REST request's own read gets that text as it is, any other caller the parsed object.
 */
export class RecordService<
  Result extends Record<string, any> = any,
  Data = Partial<Result>,
  ServiceParams extends KnexAdapterParams<any> = KnexAdapterParams,
  PatchData = Partial<Data>
> extends KnexService<Result, Data, ServiceParams, PatchData> implements GuardedWriter {
  declare options: RecordServiceOptions
  private readModel?: ReadModel
  /** Single creates and patches check their calls' write guards in their own statement (write-guards.ts). */
  readonly guardsWrites: boolean = true

  get table() {
    return this.options.name
  }

  get softDelete() {
    return this.options.softDelete !== false
  }

  get knex(): Knex {
    return this.options.Model
  }

  /** The read model of the declared shape. */
  get model(): ReadModel {
    const { read } = this.options
    if (!read) throw new Error(`${this.table}: a RecordService needs options.read, the shape its reads send`)
    this.readModel ??= new ReadModel(this.knex, { table: this.table, softDelete: this.softDelete, where: this.options.where, ...read })
    return this.readModel
  }

  /** At start-up: the catalogue read, and the declared trigger families checked. */
  async setup(): Promise<void> {
    await this.model.prepare()
    await requireTriggerFamilies(this.knex, this.table, this.options.triggerFamilies ?? [])
  }

  knexify(knexQuery: Knex.QueryBuilder, query: Record<string, any> = {}, parentKey?: string): Knex.QueryBuilder {
    const qualified: Record<string, any> = {}
    for (const [key, value] of Object.entries(query)) {
      if (!key.startsWith('$')) this.assertFilterable(key)
      qualified[key.startsWith('$') ? key : qualify(this.table, key)] = value
    }
    return super.knexify(knexQuery, qualified, parentKey)
  }

  /** A query key that is not a declared column never reaches SQL (it would be a 500 there). */
  private assertFilterable(key: string) {
    const { filterable } = this.options
    if (!filterable || key.includes('.') || filterable.has(key)) return
    throw new BadRequest('Validation failed', { errors: { [key]: 'is not a field you can filter on' } })
  }

  /**
   * The scoped, live rows of this table matching params.query and the read request, in the $sort
   * order with id breaking ties; a service's fixed conditions (options.where) always hold.
   */
  createQuery(params: ServiceParams = {} as ServiceParams) {
    const { filters } = this.filterQuery(params)
    const read = params.read ?? {}
    const sort: Record<string, number> = { ...(filters.$sort ?? {}) }
    const builder = super.createQuery({ ...params, query: { ...params.query, $sort: undefined, $select: undefined } } as ServiceParams)
    for (const [column, value] of Object.entries(this.options.where ?? {})) builder.where(`${this.table}.${column}`, value)
    if (this.softDelete && !read.withDeleted) builder.whereNull(`${this.table}.deleted_at`)
    if (read.after) {
      // A row comparison: one range of the (organization_id, updated_at, id) index, whatever the page.
      const direction = Number(sort.updated_at) === -1 ? '<' : '>'
      builder.whereRaw(`(??, ??) ${direction} (?::timestamptz, ?)`, [`${this.table}.updated_at`, `${this.table}.id`, read.after.updated_at, read.after.id])
    }
    for (const filter of read.customFieldFilters ?? []) this.whereCustomFields(builder, filter)
    for (const [column, direction] of Object.entries(sort)) builder.orderBy(qualify(this.table, column), Number(direction) === -1 ? 'desc' : 'asc')
    if (!('id' in sort)) builder.orderBy(`${this.table}.id`, Number(Object.values(sort)[0] ?? 1) === -1 ? 'desc' : 'asc')
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
    // Stored values were checked against their field's type, so the cast of a present value holds.
    const value = filter.type === 'number'
      ? `(CASE WHEN jsonb_typeof(?? -> ?) = 'number' THEN (?? ->> ?)::numeric END)`
      : `(CASE WHEN jsonb_typeof(?? -> ?) = 'string' THEN (?? ->> ?) END)`
    for (const [operator, bound] of filter.comparisons) {
      if (!COMPARISONS.has(operator)) throw new BadRequest(`Unknown comparison ${operator}`)
      builder.whereRaw(`${value} ${operator} ?`, [column, filter.key, column, filter.key, bound as Knex.Value])
    }
  }

  // Overloads of the adapter are collapsed to `any` here; callers get Paginated<Result> with paginate on.
  async _find(params: ServiceParams = {} as ServiceParams): Promise<any> {
    const { filters, paginate } = this.filterQuery(params)
    const db = databaseOf(params, this.knex)
    const builder = params.knex ? params.knex.clone() : this.createQuery(params)
    const shape: ReadShape = params.read ?? {}
    const limit = filters.$limit
    if (params.read?.csv) return new CsvAnswer(csvOfList(this, params, filters.$sort), `${this.table}.csv`)
    if (params.read?.after) {
      const descending = Number(filters.$sort?.updated_at) === -1
      const statement = await this.model.keysetPage(db, builder.limit(limit ?? 10), limit ?? 10, descending, shape)
      return this.answer(await this.run(db, statement, organizationOf(params)), params)
    }
    const rows = builder.clone()
    if (limit !== undefined) rows.limit(limit)
    if (filters.$skip) rows.offset(filters.$skip)
    const paginated = Boolean(paginate && paginate.default)
    const statement = paginated
      ? await this.model.page(db, rows, this.totalOf(db, builder, params), { limit, skip: filters.$skip || 0 }, shape)
      : await this.model.array(db, rows, shape)
    return this.answer(await this.run(db, statement, organizationOf(params)), params)
  }

  /**
   * The exact total of a list: an organization's whole list of a counted table from its counter
   * (record_counts), any other from a count of the same rows.
   */
  private totalOf(db: Knex, builder: Knex.QueryBuilder, params: ServiceParams) {
    const query = params.query ?? {}
    const organizationId = query.organization_id
    const wholeOrganization = this.options.triggerFamilies?.includes('record_counts') && this.softDelete && !params.knex && !params.read?.withDeleted &&
      !params.read?.customFieldFilters?.length && Number.isSafeInteger(organizationId) &&
      Object.keys(query).every((key) => key === 'organization_id' || PAGING.has(key) || query[key] === undefined)
    if (wholeOrganization) {
      return db('record_counts').where({ organization_id: organizationId, table_name: this.table }).select(db.raw('COALESCE(sum(live), 0)::bigint'))
    }
    return builder.clone().clearSelect().clearOrder().count('*')
  }

  /**
   * A read by id. Scoped to organizations and nothing else (the by-id query), it runs the
   * statement the read model wrote once for its relations (ReadModel.byId), only the id and the
   * organizations bound; a $select, a caller's own builder or other conditions are built for the call.
   */
  async _get(id: Id, params: ServiceParams = {} as ServiceParams): Promise<Result> {
    const db = databaseOf(params, this.knex)
    const read = params.read ?? {}
    const { organization_id: organizations, $limit: _limit, $skip: _skip, $sort: _sort, ...other } = (params.query ?? {}) as Record<string, any>
    const scope = organizations === undefined ? null : typeof organizations === 'object' ? organizations.$in : [organizations]
    const plain = !params.knex && !read.select && Object.keys(other).length === 0 && (scope === null || Array.isArray(scope))
    const statement = plain
      ? await this.model.byId(db, read.relations, Boolean(read.withDeleted), id, scope)
      : await this.model.record(db, (params.knex ? params.knex.clone() : this.createQuery(params)).where(`${this.table}.id`, id).clearOrder().limit(1), read)
    const text = await this.run(db, statement, scope?.length === 1 ? Number(scope[0]) : undefined)
    if (text === undefined) throw notFound(id)
    return this.answer(text, params)
  }

  /**
   * The stored row of a live record within the call's scope (every column, hidden ones too), for
   * the service's own rules and the write hooks; a 404 when there is none.
   */
  async storedRow(id: Id, params: ServiceParams = {} as ServiceParams): Promise<Result> {
    const row = await this.scopedWrite(id, params).select(`${this.table}.*`).first()
    if (!row) throw notFound(id)
    return row as Result
  }

  /**
   * Runs a read statement of the read model: its one row's text, or undefined when it has none.
   * On Citus, a statement of one organization is routed to its shard (citus.ts).
   */
  private async run(db: Knex, statement: Statement, organization?: number): Promise<string | undefined> {
    const [row] = await preparedRows<{ answer: string | null }>(db, await routed(this.knex, db, statement, organization))
    return row?.answer ?? undefined
  }

  /** The text as it is for a REST request's own read, the parsed object for anyone else. */
  private answer(text: string | undefined, params: ServiceParams): any {
    if (text === undefined) return undefined
    return params.read?.rendered ? new RenderedAnswer(text) : JSON.parse(text)
  }

  /**
   * A write statement's rows (`RETURNING *`) as the API sends the record, in the same statement
   * (ReadModel.written): in id order. For a service whose writes are its own statements.
   */
  protected async written(db: Knex, write: Knex.QueryBuilder | Knex.Raw): Promise<Result[]> {
    if (await isCitus(this.knex)) {
      // Citus cannot route a write's CTE read with relations of its rows: the write, then its rows rendered.
      const result: any = await write
      return this.renderedOn(db, Array.isArray(result) ? result : result.rows)
    }
    return JSON.parse((await this.run(db, await this.model.written(db, write)))!) as Result[]
  }

  /** Rows of this table a write holds already, as the API sends the record, in their order (ReadModel.rendered). */
  async rendered(rows: Record<string, unknown>[], params: { transaction?: { trx?: Knex.Transaction } } = {}): Promise<Result[]> {
    return this.renderedOn(databaseOf(params, this.knex), rows)
  }

  private async renderedOn(db: Knex, rows: Record<string, unknown>[]): Promise<Result[]> {
    if (rows.length === 0) return []
    const organizations = new Set(rows.map((row) => row.organization_id))
    const organization = organizations.size === 1 ? Number([...organizations][0]) : undefined
    return JSON.parse((await this.run(db, await this.model.rendered(db, rows), organization))!) as Result[]
  }

  /**
   * One INSERT, answered as the API sends the records. A single create writes only where the
   * guards its hooks gave it hold (write-guards.ts); when one does not, nothing is written and
   * WriteGuardsFailed says so to the write's hook, which checks and writes again.
   */
  async _create(data: any, params: ServiceParams = {} as ServiceParams): Promise<any> {
    const db = databaseOf(params, this.knex)
    if (Array.isArray(data) && params.dryRun) return []
    if (Array.isArray(data)) return this.written(db, db(this.table).insert(data).returning('*'))
    const guards = guardsOf(this, params)
    const guarded = guards.length > 0 ? await guardedInsert(this.knex, db, this.table, data, guards) : { write: db(this.table).insert(data).returning('*') }
    if (!guarded) throw new WriteGuardsFailed(guards)
    const [record] = await this.written(db, guarded.write)
    if (!record) throw new WriteGuardsFailed(guards)
    return this.withSecretsOf(data, record)
  }

  /** The record with the secret fields the write set (they are never read back). */
  private withSecretsOf(data: Record<string, unknown>, record: Result): Result {
    const secrets = (this.options.secretFields ?? []).filter((field) => typeof data[field] === 'string')
    return secrets.length ? { ...record, ...Object.fromEntries(secrets.map((field) => [field, data[field]])) } : record
  }

  /** Creates or changes records matched by a declared key, in one transaction (upsert.ts). */
  async upsertRows(keyName: string, records: UpsertRecord[], params: ServiceParams = {} as ServiceParams) {
    const run = (trx: Knex.Transaction) => upsertRows(trx, this.table, this.options.upsertKeys ?? {}, keyName, records, (write) => this.written(trx, write))
    return params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run)
  }

  /** The upsert custom method: its records prepared by the batch hooks (batch-writes.ts). */
  async upsert(data: { idProperty: string; records: UpsertRecord[] }, params: ServiceParams = {} as ServiceParams) {
    if (params.dryRun) {
      const matched = await matchRows(databaseOf(params, this.knex), this.table, this.options.upsertKeys ?? {}, data.idProperty, data.records)
      const created = matched.filter((id) => id === null).length
      return { created, updated: matched.length - created, data: matched.map((id) => ({ id }) as unknown as Result) }
    }
    const written = await this.upsertRows(data.idProperty, data.records, params)
    params.batchEvents = written.map(({ created }) => (created ? 'created' : 'patched'))
    const created = written.filter((record) => record.created).length
    return { created, updated: written.length - created, data: written.map(({ row }) => row as Result) }
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

  /**
   * Soft-deletes live records of one organization by id, with their declared dependants, in one
   * transaction and a constant number of statements; all or nothing: an id that is not a live
   * record of the organization is a 404 naming the first such id, and nothing is deleted.
   */
  async removeRows(organizationId: number, ids: number[], params: ServiceParams = {} as ServiceParams): Promise<Result[]> {
    const run = async (trx: Knex.Transaction) => {
      const write = trx(this.table).where({ organization_id: organizationId }).whereIn('id', ids)
      const rows = await this.written(trx, this.softDelete
        ? write.whereNull('deleted_at').update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('*')
        : write.delete().returning('*'))
      this.assertAllFound(ids, rows)
      if (this.softDelete && rows.length > 0) await this.cascade(trx, organizationId, ids, params)
      return this.inOrderOf(ids, rows)
    }
    return params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run)
  }

  /** The live rows of one organization with these ids, in the order of the ids; 404 naming the first id missing. */
  async liveRows(organizationId: number, ids: number[], params: ServiceParams = {} as ServiceParams): Promise<Result[]> {
    const rows: Result[] = await this.db(params).where({ organization_id: organizationId }).whereIn('id', ids).whereNull('deleted_at')
    this.assertAllFound(ids, rows)
    return this.inOrderOf(ids, rows)
  }

  private inOrderOf(ids: number[], rows: Result[]) {
    const byId = new Map(rows.map((row) => [Number(row.id), row]))
    return ids.map((id) => byId.get(Number(id))!)
  }

  private assertAllFound(ids: number[], rows: Result[]) {
    const found = new Set(rows.map((row) => Number(row.id)))
    const missing = ids.find((id) => !found.has(Number(id)))
    if (missing !== undefined) throw notFound(missing)
  }

  /**
   * The declared dependants of deleted records, soft-deleted in the records' transaction, so at
   * their instant (now() is the transaction's); their stored rows go to params.cascaded, which
   * the delete's hook gave for their events.
   */
  private async cascade(db: Knex, organizationId: number, ids: number[], params: ServiceParams) {
    for (const { table, column, path } of this.options.softDeleteCascade ?? []) {
      const rows: Record<string, any>[] = await db(table).where({ organization_id: organizationId }).whereIn(column, ids).whereNull('deleted_at')
        .update({ deleted_at: db.fn.now(), updated_at: db.fn.now() }).returning('*')
      params.cascaded?.push(...rows.map((record) => ({ path: cascadedPathOf(path, record), record })))
    }
  }

  /** One UPDATE ... RETURNING on the live, scoped row (or rows, for an explicit multi patch), guarded as _create is. */
  async _patch(id: NullableId, data: PatchData, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (id === null && !this.allowsMulti('patch', params)) throw new MethodNotAllowed('Can not patch multiple entries')
    const changes: Record<string, unknown> = { ...(data as any), updated_at: this.knex.fn.now() }
    delete changes.id
    const guards = id === null ? [] : guardsOf(this, params)
    const write = this.scopedWrite(id, params)
    if (guards.length > 0) {
      const condition = allHold(guards)
      write.whereRaw(condition.sql, condition.bindings)
    }
    const records = await this.written(databaseOf(params, this.knex), write.update(changes).returning('*'))
    if (id === null) return records
    if (records.length === 1) return this.withSecretsOf(data as Record<string, unknown>, records[0])
    throw guards.length > 0 ? new WriteGuardsFailed(guards) : notFound(id)
  }

  /**
   * Soft delete: deleted_at and updated_at set to the same instant, the record returned. The
   * declared dependants (softDeleteCascade) are soft-deleted at that instant, in the call's
   * transaction (its hook opens one for a resource that declares them).
   */
  async _remove(id: NullableId, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Can not remove multiple entries')
    const cascades = this.softDelete && (this.options.softDeleteCascade ?? []).length > 0
    if (cascades && !params.transaction?.trx) {
      return this.knex.transaction((trx) => this._remove(id, { ...params, transaction: { trx } }))
    }
    const db = databaseOf(params, this.knex)
    const write = this.scopedWrite(id, params)
    const [record] = await this.written(db, this.softDelete
      ? write.update({ deleted_at: this.knex.fn.now(), updated_at: this.knex.fn.now() }).returning('*')
      : write.delete().returning('*'))
    if (!record) throw notFound(id)
    if (cascades) await this.cascade(db, record.organization_id, [record.id], params)
    return record
  }

  /**
   * The answer of a `search` custom method: the matches of the term under the resource's rule
   * (search.ts), in the search envelope, in one statement.
   */
  async searchRecords(rule: SearchRule, search: SearchTerms, bindings?: Record<string, Knex.Value>): Promise<SearchEnvelope<Result>> {
    const page = { organizationId: search.organization_id!, term: search.searchTerm, limit: search.$limit ?? 10, skip: search.$skip ?? 0, bindings }
    const statement = await this.model.searchPage(this.knex, searchQueries(this.table, rule, page), {})
    return JSON.parse((await this.run(this.knex, statement, page.organizationId))!) as SearchEnvelope<Result>
  }

  /** A write statement restricted to the live rows matching params.query (and id). */
  scopedWrite(id: NullableId, params: ServiceParams) {
    const { query } = this.filterQuery(params)
    const builder = this.db(params)
    this.knexify(builder, query)
    for (const [column, value] of Object.entries(this.options.where ?? {})) builder.where(`${this.table}.${column}`, value)
    if (this.softDelete) builder.whereNull(`${this.table}.deleted_at`)
    if (id !== null) builder.where(`${this.table}.id`, id)
    return builder
  }
}
