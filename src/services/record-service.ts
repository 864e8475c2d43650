import { KnexService } from '@feathersjs/knex'
import type { KnexAdapterOptions, KnexAdapterParams } from '@feathersjs/knex'
import { BadRequest, NotFound, MethodNotAllowed } from '@feathersjs/errors'
import type { Id, NullableId } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { containsPattern } from './like.js'

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
  }
}

/** A page of search matches in the spec's list envelope. */
export interface SearchPage<T> {
  total: number
  limit: number
  skip: number
  data: T[]
}

const qualify = (table: string, column: string) => (column.includes('.') ? column : `${table}.${column}`)

/** Tables whose live rows per organization are counted by triggers (migration 20261121000900_record_counts). */
const MAINTAINED_COUNTS = new Set(['companies', 'contacts', 'deals', 'activities'])

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

  /** The scoped, live rows of this table matching params.query, before paging. */
  createQuery(params: ServiceParams = {} as ServiceParams) {
    const { filters } = this.filterQuery(params)
    const builder = super.createQuery({ ...params, query: { ...params.query, $sort: undefined } } as ServiceParams)
    if (this.softDelete && !params.withDeleted) builder.whereNull(`${this.table}.deleted_at`)
    const sort: Record<string, 1 | -1> = { ...(filters.$sort ?? {}) }
    if (params.after) {
      // A row comparison: one range of the (organization_id, updated_at, id) index, whatever the page.
      const direction = Number(sort.updated_at) === -1 ? '<' : '>'
      builder.whereRaw(`(??, ??) ${direction} (?::timestamptz, ?)`, [
        `${this.table}.updated_at`, `${this.table}.id`, params.after.updated_at, params.after.id
      ])
    }
    for (const filter of params.customFieldFilters ?? []) this.whereCustomFields(builder, filter)
    for (const [column, direction] of Object.entries(sort)) {
      builder.orderBy(qualify(this.table, column), Number(direction) === -1 ? 'desc' : 'asc')
    }
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
    const matching = this.knex('custom_field_ranges')
      .select('record_id')
      .where({ organization_id: filter.organizationId, table_name: this.table, key: filter.key })
    for (const [operator, value] of filter.comparisons) matching.where(filter.column, operator, value as any)
    builder.whereIn(`${this.table}.id`, matching)
  }

  // Overloads of the adapter are collapsed to `any` here; callers get Paginated<Result> with paginate on.
  async _find(params: ServiceParams = {} as ServiceParams): Promise<any> {
    const { filters, paginate } = this.filterQuery(params)
    const builder = params.knex ? params.knex.clone() : this.createQuery(params)
    if (params.after) return this.keysetPage(builder, filters.$limit, Boolean(paginate && paginate.default))
    const countQuery = this.countQuery(builder, params)
    if (filters.$limit) builder.limit(filters.$limit)
    if (filters.$skip) builder.offset(filters.$skip)
    const [data, count] = await Promise.all([
      filters.$limit === 0 ? Promise.resolve([]) : builder,
      paginate && paginate.default ? countQuery : Promise.resolve(undefined)
    ])
    if (!count) return data as Result[]
    return { total: Number(count[0]?.total ?? 0), limit: filters.$limit, skip: filters.$skip || 0, data: data as Result[] }
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
    const next = last ? { updated_at: new Date(last.updated_at).toISOString(), id: last.id } : null
    return { limit, skip: 0, next, data: data as Result[] }
  }

  /**
   * The exact total of a list. When it is the count of one organization's live rows of a large
   * table, it is read from the trigger-maintained record_counts (a few rows) instead of counting
   * every row; any other filter, join or prepared builder is counted on the table as before.
   */
  countQuery(builder: Knex.QueryBuilder, params: ServiceParams) {
    const count = builder.clone().clearSelect().clearOrder().count({ total: '*' })
    if (!this.softDelete || !MAINTAINED_COUNTS.has(this.table)) return count
    const { sql, bindings } = count.toSQL()
    const wholeOrganization = this.knex(this.table)
      .where(`${this.table}.organization_id`, 0)
      .whereNull(`${this.table}.deleted_at`)
      .count({ total: '*' })
      .toSQL().sql
    if (sql !== wholeOrganization || bindings.length !== 1 || typeof bindings[0] !== 'number') return count
    const db = params.transaction?.trx ?? this.knex
    return db('record_counts').where({ organization_id: bindings[0], table_name: this.table }).sum({ total: 'live' })
  }

  async _get(id: Id, params: ServiceParams = {} as ServiceParams): Promise<Result> {
    const row = await this.createQuery(params).andWhere(`${this.table}.id`, id).first()
    if (!row) throw new NotFound(`No record found for id '${id}'`)
    return row as Result
  }

  async _create(data: any, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (Array.isArray(data)) throw new MethodNotAllowed('Send one record at a time')
    const [row] = await this.db(params).insert(data).returning('*')
    return row as Result
  }

  /** One UPDATE ... RETURNING on the live, scoped row (or rows, for an explicit multi patch). */
  async _patch(id: NullableId, data: PatchData, params: ServiceParams = {} as ServiceParams): Promise<any> {
    if (id === null && !this.allowsMulti('patch', params)) throw new MethodNotAllowed('Can not patch multiple entries')
    const changes: Record<string, unknown> = { ...(data as any), updated_at: this.knex.fn.now() }
    delete changes.id
    const rows = await this.scopedWrite(id, params).update(changes).returning('*')
    if (id !== null) {
      if (rows.length !== 1) throw new NotFound(`No record found for id '${id}'`)
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
    if (rows.length !== 1) throw new NotFound(`No record found for id '${id}'`)
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
    const total = rows.length > 0
      ? Number(rows[0].search_total)
      : skip > 0 ? Number((await matches.clone().count({ total: '*' }))[0]?.total ?? 0) : 0
    for (const row of rows) delete row.search_total
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
