import type { Knex } from 'knex'
import type { TObject } from '@feathersjs/typebox'
import type { CustomFieldAddressing } from '../hooks/custom-field-values.js'
import type { CustomFieldEntity } from '../hooks/custom-field-values.js'
import { ISO_TIMESTAMP, columnsOf, quote, renderedColumn, sqlText } from './catalog.js'
import type { SearchQueries } from './search.js'

/**
 * The read model of a resource: how Postgres writes its records in their external shape, so that
 * every list and read by id is one statement whose answer Node passes through as text (as
 * PostgREST answers). It is built from the resource's declaration: the result schema says which
 * columns leave the service (a column outside it is never selected), the relations and custom
 * fields say what is joined, and the table's column types say how each value is written.
 */

/** A related record (or records) a read attaches under `as`. */
export interface Relation {
  as: string
  table: string
  /** The related record's fields: columns of `table`, or names of `computed`. */
  columns: string[]
  /** Fields computed in SQL over the related row (alias r), e.g. a full name. */
  computed?: Record<string, string>
  /** A tenant table is joined within the record's organization only; users are global. */
  tenant?: boolean
  /** A deleted related row joins too (by default it joins as null, or is left out of a list). */
  withDeleted?: boolean
  /** One related record: the column of the record holding its id. */
  from?: string
  /** The related records pointing at the record: the column of `table` holding the record's id, in id order. */
  many?: string
  /** The related records whose ids the record lists: its integer array column, in the array's order. */
  listedIn?: string
  /** The number of related records pointing at the record: the column of `table` holding its id (`columns` empty). */
  count?: string
}

/** Custom-field values sent under their names (or keys), from the record's custom_fields column. */
export interface CustomFieldsOutput {
  entity: CustomFieldEntity
  by: CustomFieldAddressing
}

export interface ReadModelDeclaration {
  table: string
  /** The record as the API sends it: its properties are what a read selects. */
  schema: TObject
  softDelete: boolean
  customFields?: CustomFieldsOutput
  /** Properties computed in SQL over the record's row (alias p). */
  computed?: Record<string, string>
  /** Properties of the schema that are never sent (a hash kept for lookups). */
  hidden?: string[]
  /** The relations a single record carries (a read by id, a write's answer, an event). */
  record?: Relation[]
  /** The relations a list attaches (with its flag), which a read by id may ask for too. */
  list?: Relation[]
  /** Conditions every row of the service meets, fixed for the service (equality on columns). */
  where?: Record<string, string | number | boolean>
}

/** What one read asks besides its rows: the relations to attach and the fields to keep. */
export interface ReadShape {
  relations?: Relation[]
  /** $select: only these properties (and id). */
  select?: string[]
}

/**
 * A read statement, not yet run: a knex Raw is a thenable, so an async function cannot return one
 * without running it.
 */
export interface Statement {
  raw: Knex.Raw
  /** The same statement with numbered parameters, when it is known already (a compiled read). */
  native?: { sql: string; bindings: readonly unknown[] }
}

export const customFieldsProperty = (by: CustomFieldAddressing) => `custom_fields_by_${by}`

/**
 * Statements take `db`, the connection they will run on (a call's transaction, or the pool): the
 * catalogue is read there the first time, since inside a transaction on the embedded database it
 * is the only connection.
 */
export class ReadModel {
  /** The select list of each set of relations (a declared array), written once: it depends on nothing else. */
  private projections = new Map<Relation[] | undefined, Promise<string>>()
  /** The text of a read by id for each declared set of relations, deleted rows or not, scoped or not. */
  private byIdTexts = new Map<string, Promise<string>>()

  constructor(
    private readonly base: Knex,
    readonly declaration: ReadModelDeclaration
  ) {}

  get table() {
    return this.declaration.table
  }

  /** Reads the database's catalogue, so that no request pays for it. */
  async prepare(): Promise<void> {
    await columnsOf(this.base, this.table)
  }

  /**
   * The select list writing a record of the rows aliased `p` in its external shape: every
   * property of the schema that is a column, computed, custom fields or a relation asked for.
   */
  projection(db: Knex, shape: ReadShape = {}): Promise<string> {
    // A $select comes from the client: written for the call, never kept.
    if (shape.select) return this.writeProjection(db, shape)
    let projection = this.projections.get(shape.relations)
    if (!projection) {
      projection = this.writeProjection(db, shape)
      projection.catch(() => this.projections.delete(shape.relations))
      this.projections.set(shape.relations, projection)
    }
    return projection
  }

  private async writeProjection(db: Knex, shape: ReadShape): Promise<string> {
    const { schema, computed = {}, customFields, hidden = [] } = this.declaration
    const columns = new Map((await columnsOf(this.base, this.table, db)).map((column) => [column.name, column]))
    const kept = (name: string) => !hidden.includes(name) && (!shape.select || name === 'id' || shape.select.includes(name))
    const members: string[] = []
    for (const name of Object.keys(schema.properties)) {
      if (!kept(name)) continue
      const column = columns.get(name)
      if (name in computed) members.push(`${computed[name]} AS ${quote(name)}`)
      else if (column) members.push(`${renderedColumn(column, `p.${quote(name)}`)} AS ${quote(name)}`)
      else if (customFields && name === customFieldsProperty(customFields.by)) members.push(`${customFieldsSql(customFields)} AS ${quote(name)}`)
    }
    for (const relation of shape.relations ?? []) {
      if (kept(relation.as)) members.push(`${await relationSql(this.base, db, relation)} AS ${quote(relation.as)}`)
    }
    return members.join(', ')
  }

  /**
   * One page as the list envelope {total, limit, skip, data}, in one statement: `rows` is the
   * page's rows in order (limit and offset applied), `total` a statement of one number.
   */
  async page(db: Knex, rows: Knex.QueryBuilder, total: Knex.QueryBuilder, page: { limit?: number; skip: number }, shape: ReadShape): Promise<Statement> {
    const projection = await this.projection(db, shape)
    return {
      raw: db.raw(
        `SELECT row_to_json(e)::text AS answer FROM (SELECT (?) AS total, ?::int AS "limit", ?::int AS skip, ${dataOf(projection)} AS data) AS e`,
        [total, page.limit ?? null, page.skip, rows]
      )
    }
  }

  /** The records of `rows` as a JSON array, in order (a list without paging). */
  async array(db: Knex, rows: Knex.QueryBuilder, shape: ReadShape): Promise<Statement> {
    return { raw: db.raw(`SELECT ${dataOf(await this.projection(db, shape))}::text AS answer`, [rows]) }
  }

  /**
   * A keyset page {limit, skip, next, data}: `next` is the (updated_at, id) of its last record,
   * the cursor of the following page, or null when the page is empty.
   */
  async keysetPage(db: Knex, rows: Knex.QueryBuilder, limit: number, descending: boolean, shape: ReadShape): Promise<Statement> {
    const projection = await this.projection(db, shape)
    const last = descending ? 'ASC' : 'DESC'
    return { raw: db.raw(
      `WITH p AS (?)
       SELECT row_to_json(e)::text AS answer FROM (SELECT ?::int AS "limit", 0 AS skip,
         (SELECT row_to_json(c) FROM (SELECT to_char(p.updated_at AT TIME ZONE 'UTC', ${ISO_TIMESTAMP}) AS updated_at, p.id
            FROM p ORDER BY p.updated_at ${last}, p.id ${last} LIMIT 1) AS c) AS next,
         COALESCE((SELECT array_to_json(array_agg(r)) FROM (SELECT ${projection} FROM p) AS r), '[]'::json) AS data) AS e`,
      [rows, limit]
    ) }
  }

  /**
   * A search's page as the search envelope {total, total_capped, limit, skip, data}, in one
   * statement: the search's matched ids (search.ts) joined back to their records, in order.
   */
  async searchPage(db: Knex, search: SearchQueries, shape: ReadShape): Promise<Statement> {
    const projection = await this.projection(db, shape)
    const table = quote(this.table)
    return {
      raw: db.raw(
        `${search.with}
        SELECT row_to_json(e)::text AS answer FROM (SELECT (${search.total}) AS total, (${search.capped}) AS total_capped, CAST(:limit AS integer) AS "limit",
          CAST(:skip AS integer) AS skip, COALESCE((SELECT array_to_json(array_agg(r)) FROM (SELECT ${projection} FROM (
            SELECT p.* FROM (${search.page}) AS m JOIN ${table} AS p ON p.organization_id = :organization AND p.id = m.id ORDER BY m.position
          ) AS p) AS r), '[]'::json) AS data) AS e`,
        search.bindings
      )
    }
  }

  /**
   * The rows a write statement returns (`RETURNING *`), written as a read by id writes them, in
   * the write's own statement (PostgREST's prepareWrite): a JSON array in id order.
   */
  async written(db: Knex, write: Knex.QueryBuilder | Knex.Raw): Promise<Statement> {
    const projection = await this.projection(db, { relations: this.declaration.record })
    const { sql, bindings } = write.toSQL()
    return { raw: db.raw(`WITH p AS (${sql}) ${arrayOf(projection, 'p ORDER BY p.id')}`, bindings as Knex.RawBinding[]) }
  }

  /**
   * Rows of this table a write holds already (a service that writes them itself, a cascade),
   * written as a read by id writes them, in the order given, without reading the table again.
   */
  async rendered(db: Knex, rows: Record<string, unknown>[]): Promise<Statement> {
    const projection = await this.projection(db, { relations: this.declaration.record })
    return {
      // Each row and its place apart, rather than the record set WITH ORDINALITY: Citus sends the
      // latter to a worker with `ordinality` ambiguous when a relation's subquery is routed along.
      raw: db.raw(`${arrayOf(projection, `jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(row, place) CROSS JOIN LATERAL jsonb_populate_record(NULL::${quote(this.table)}, e.row) AS p ORDER BY e.place`)}`, [
        JSON.stringify(rows)
      ])
    }
  }

  /**
   * A read by id, scoped to some organizations (null: any, for the service's own calls). Its text
   * depends on the relations and on deleted rows being read or not only: written once for each
   * declared set of relations, run as a named statement with the id and the organizations bound.
   */
  async byId(db: Knex, relations: Relation[] | undefined, withDeleted: boolean, id: unknown, organizations: number[] | null): Promise<Statement> {
    const declared = [undefined, this.declaration.record, this.declaration.list].indexOf(relations)
    const key = `${declared}:${withDeleted}:${organizations !== null}`
    let text = declared === -1 ? undefined : this.byIdTexts.get(key)
    if (!text) {
      text = this.byIdText(db, relations, withDeleted, organizations !== null)
      if (declared !== -1) {
        text.catch(() => this.byIdTexts.delete(key))
        this.byIdTexts.set(key, text)
      }
    }
    const sql = await text
    const bindings = organizations === null ? [id] : [id, organizations]
    return { raw: db.raw(sql, bindings as Knex.RawBinding[]), native: { sql: numbered(sql), bindings } }
  }

  private async byIdText(db: Knex, relations: Relation[] | undefined, withDeleted: boolean, scoped: boolean) {
    const conditions = [
      'p.id = ?',
      ...(scoped ? ['p.organization_id = ANY(?::int[])'] : []),
      ...(this.declaration.softDelete && !withDeleted ? ['p.deleted_at IS NULL'] : []),
      ...Object.entries(this.declaration.where ?? {}).map(([column, value]) => `p.${quote(column)} = ${typeof value === 'string' ? sqlText(value) : value}`)
    ]
    return `SELECT row_to_json(r)::text AS answer FROM (SELECT ${await this.projection(db, { relations })} FROM ${quote(this.table)} AS p WHERE ${conditions.join(' AND ')}) AS r`
  }

  /** One record as a JSON object (no row: no answer), `rows` holding at most that record. */
  async record(db: Knex, rows: Knex.QueryBuilder, shape: ReadShape): Promise<Statement> {
    return { raw: db.raw(`SELECT row_to_json(r)::text AS answer FROM (SELECT ${await this.projection(db, shape)} FROM (?) AS p) AS r`, [rows]) }
  }
}

/** A statement's `?` placeholders as $1, $2 … (its text holds no other question mark). */
const numbered = (sql: string) => {
  let position = 0
  return sql.replace(/\?/g, () => `$${++position}`)
}

/** The records of `rows` (a FROM item aliased p, with its ORDER BY) as one JSON array text. */
const arrayOf = (projection: string, rows: string) =>
  `SELECT COALESCE(array_to_json(array_agg(r)), '[]'::json)::text AS answer FROM (SELECT ${projection} FROM ${rows}) AS r`

/** The records of the rows `p` (a subquery, in order) as a JSON array, [] when there are none. */
const dataOf = (projection: string) => `COALESCE((SELECT array_to_json(array_agg(r)) FROM (SELECT ${projection} FROM (?) AS p) AS r), '[]'::json)`

/**
 * The custom-field values of the record `p` as an object: the live definitions of its
 * organization for the entity, in their order, each whose stored value is present and not null,
 * under its name (or key).
 */
function customFieldsSql({ entity, by }: CustomFieldsOutput) {
  // Written out rather than json_object_agg, which spaces its keys and values unlike every other object sent.
  return `CASE WHEN p.custom_fields IS NULL OR p.custom_fields = '{}'::jsonb THEN '{}'::json ELSE COALESCE((
    SELECT ('{' || string_agg(to_json(d.${quote(by)})::text || ':' || (p.custom_fields -> d.key)::text, ',' ORDER BY d.position, d.id) || '}')::json
      FROM custom_fields d
     WHERE d.organization_id = p.organization_id AND d.entity_type = '${entity}' AND d.deleted_at IS NULL
       AND jsonb_typeof(p.custom_fields -> d.key) <> 'null'), '{}'::json) END`
}

/**
 * A relation of the record `p` as JSON: a correlated subquery, one probe of the related table's
 * key (or its index on `many`) per record, so a page of any length stays one statement. The
 * related table keeps its own name as alias, so a computed field may qualify its columns by it.
 */
async function relationSql(base: Knex, db: Knex, relation: Relation): Promise<string> {
  const table = quote(relation.table)
  const columns = new Map((await columnsOf(base, relation.table, db)).map((column) => [column.name, column]))
  const fields = relation.columns.map((name) => {
    const computed = relation.computed?.[name]
    const column = columns.get(name)
    if (computed) return `${computed} AS ${quote(name)}`
    if (!column) throw new Error(`${relation.table} has no column ${name} (relation ${relation.as})`)
    return `${renderedColumn(column, `${table}.${quote(name)}`)} AS ${quote(name)}`
  }).join(', ')
  const tenant = relation.tenant !== false
  const where = (condition: string) => [
    condition,
    ...(tenant ? [`${table}.organization_id = p.organization_id`] : []),
    ...(tenant && !relation.withDeleted ? [`${table}.deleted_at IS NULL`] : [])
  ].join(' AND ')
  if (relation.from) {
    return `(SELECT row_to_json(x) FROM (SELECT ${fields} FROM ${table} WHERE ${where(`${table}.id = p.${quote(relation.from)}`)}) AS x)`
  }
  if (relation.many) {
    return `(SELECT COALESCE(array_to_json(array_agg(x)), '[]'::json) FROM (SELECT ${fields} FROM ${table} WHERE ${where(`${table}.${quote(relation.many)} = p.id`)} ORDER BY ${table}.id) AS x)`
  }
  if (relation.listedIn) {
    // One probe of the key per listed id (LIMIT 1 keeps the planner from joining the whole table), in the list's order.
    return `(SELECT COALESCE(array_to_json(array_agg(x ORDER BY listed.position)), '[]'::json) FROM unnest(p.${quote(relation.listedIn)}) WITH ORDINALITY AS listed(id, position)
      CROSS JOIN LATERAL (SELECT ${fields} FROM ${table} WHERE ${where(`${table}.id = listed.id`)} LIMIT 1) AS x)`
  }
  if (relation.count) return `(SELECT count(*) FROM ${table} WHERE ${where(`${table}.${quote(relation.count)} = p.id`)})`
  throw new Error(`relation ${relation.as} names neither from, many, listedIn nor count`)
}

/** A user as related records show them (creator, owner, assignee). */
export const USER_SUMMARY = ['id', 'first_name', 'last_name']
