import crypto from 'node:crypto'
import type { Knex } from 'knex'
import { runStatement } from './record-service.js'
import { markTriggers } from '../../migrations/lib/change-marks.js'

export interface JoinSpec {
  /** Column on the rows holding the related id. */
  from: string
  /** Property the related record is attached under (null when absent or not found). */
  as: string
  /** Table to load from. */
  table: string
  /** Columns of the related record to return. */
  columns: string[]
  /** Tenant tables are loaded within the rows' organization only; users are global. */
  tenant?: boolean
  /** Include soft-deleted related rows? By default a deleted record joins as null. */
  withDeleted?: boolean
  /** Computed columns, e.g. { full_name: "concat_ws(' ', first_name, last_name)" }. */
  computed?: Record<string, string>
}

/**
 * Attaches related records to a page of rows with one query per related table, however long the
 * page: every joined single read, and the lists that cannot carry their relations in their own
 * statement (inlineRelationsSelect: a subclass's own list query, a loader of its own). Relations
 * on the same table loaded the same way (an activity's creator and assignee, both users) share
 * that one query, and on a Postgres server the queries of one page travel in one round trip.
 */
export async function attachRelations<T extends Record<string, any>>(db: Knex, rows: T[], specs: JoinSpec[]): Promise<T[]> {
  if (rows.length === 0) return rows
  const groups = new Map<string, JoinSpec[]>()
  for (const spec of specs) {
    const key = JSON.stringify([spec.table, spec.tenant !== false, Boolean(spec.withDeleted), spec.computed ?? {}])
    groups.set(key, [...(groups.get(key) ?? []), spec])
  }
  const organizations = [...new Set(rows.map((row) => row.organization_id))]
  const loads = [...groups.values()].map((group) => relationLoad(rows, group, organizations)).filter((load) => load.ids.length > 0)
  const related = await loadAll(db, loads)
  for (const group of groups.values()) attachGroup(rows, group, related.get(group[0]) ?? [])
  return rows
}

interface RelationLoad {
  spec: JoinSpec
  columns: string[]
  ids: unknown[]
  organizations: unknown[]
}

function relationLoad(rows: Record<string, any>[], group: JoinSpec[], organizations: unknown[]): RelationLoad {
  const ids = [...new Set(group.flatMap((spec) => rows.map((row) => row[spec.from])).filter((id) => id !== null && id !== undefined))]
  const columns = [...new Set(['id', ...group.flatMap((spec) => spec.columns)])]
  return { spec: group[0], columns, ids, organizations }
}

function attachGroup(rows: Record<string, any>[], group: JoinSpec[], related: Record<string, any>[]) {
  const tenant = group[0].tenant !== false
  // By organization, then id: no key string built per row (a page's rows are of one organization or few).
  const byOrganization = new Map<unknown, Map<unknown, Record<string, any>>>()
  for (const record of related) {
    const organization = tenant ? record.organization_id : null
    let byId = byOrganization.get(organization)
    if (!byId) byOrganization.set(organization, (byId = new Map()))
    byId.set(record.id, record)
  }
  for (const spec of group) {
    for (const row of rows) {
      const id = row[spec.from]
      const record = id === null || id === undefined ? undefined : byOrganization.get(tenant ? row.organization_id : null)?.get(id)
      ;(row as any)[spec.as] = record ? pick(record, spec.columns) : null
    }
  }
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`

/** The related rows of every load, by the spec that leads its group. */
async function loadAll(db: Knex, loads: RelationLoad[]): Promise<Map<JoinSpec, Record<string, any>[]>> {
  const server = db.client.config.client === 'pg' && !(db as any).isTransaction
  const integers = (values: unknown[]) => values.every((value) => Number.isSafeInteger(value))
  const results = server && loads.length > 1 && loads.every((load) => integers(load.ids) && integers(load.organizations))
    ? await oneRoundTrip(db, loads)
    : await Promise.all(loads.map((load) => server ? loadNamed(db, load) : loadBuilt(db, load)))
  return new Map(loads.map((load, i) => [load.spec, results[i]]))
}

/**
 * The rows of a related table a relation may join, whichever way it is loaded: the ones `id`
 * names, of the `organization` given for a tenant table (users are global), live unless the
 * relation takes deleted ones. `id` and `organization` complete a comparison (`= ANY($1)`,
 * `= "deals".organization_id`); `table` qualifies the columns.
 */
function relationWhere(spec: JoinSpec, table: string, id: string, organization: string) {
  const tenant = spec.tenant !== false
  return `WHERE ${table}id ${id}` +
    (tenant ? ` AND ${table}organization_id ${organization}` : '') +
    (tenant && !spec.withDeleted ? ` AND ${table}deleted_at IS NULL` : '')
}

/**
 * A list's relations as columns of its own statement, or null when they cannot be (a relation
 * to the list's own table, whose name inside the subquery would hide the outer one). Each is a
 * correlated scalar subquery that builds the related record as JSON (its columns in the spec's
 * order, null when absent, deleted or of another organization; `row_to_json` of a subselect,
 * which costs Postgres less per record than `json_build_object` of the same columns: 455-465
 * against 540-550 µs for the relations of 50 deals), so a joined page is one
 * statement and one round trip instead of two; each row's lookup is one probe of the related
 * table's primary key. The columns go through JSON, so a spec's columns must be of types JSON
 * keeps as the driver reads them: text, integers (int4), booleans, JSON;
 * test/performance/inline-joins.test.ts compares every resource's list relations read both ways.
 */
export function inlineRelationsSelect(specs: JoinSpec[], outer: string): string | null {
  if (specs.length === 0 || specs.some((spec) => spec.table === outer)) return null
  return specs.map((spec) => {
    const table = quote(spec.table)
    const fields = spec.columns.map((column) => `${spec.computed?.[column] ?? `${table}.${quote(column)}`} AS ${quote(column)}`)
    return `(SELECT row_to_json(crm_relation) FROM ${relationProbe(spec, outer, fields.join(', '))} AS crm_relation) AS ${quote(spec.as)}`
  }).join(', ')
}

/** `(SELECT <selection> FROM <related table> WHERE …)`: the related row of an `outer` row, as a list's relation reads it. */
function relationProbe(spec: JoinSpec, outer: string, selection: string) {
  const table = quote(spec.table)
  const row = (column: string) => `= ${quote(outer)}.${quote(column)}`
  return `(SELECT ${selection} FROM ${table} ${relationWhere(spec, `${table}.`, row(spec.from), row('organization_id'))})`
}

/**
 * The versions of a list's relations (record-texts.ts) as one SQL text expression on the outer
 * table's rows: for each relation in order, the related row's xmin, probed the way
 * inlineRelationsSelect reads the row, '-' where there is none (absent, deleted, another
 * organization's). A relation computed from other rows than its own (a subquery) has no version
 * of its own: then the expression is NULL, and records with those relations are read every time.
 */
export function inlineRelationVersions(specs: JoinSpec[], outer: string): string {
  if (specs.some((spec) => Object.values(spec.computed ?? {}).some((sql) => /\bselect\b/i.test(sql)))) return NO_VERSION
  return specs.map((spec) => `COALESCE(${relationProbe(spec, outer, `${quote(spec.table)}.xmin::text`)}, '-')`).join(` || '/' || `)
}

/** inlineRelationVersions of relations that have no version. */
export const NO_VERSION = 'NULL::text'

/** Tenant tables (counted by organization) and global ones (users, counted under organization 0). */
export interface MarkedTables {
  tenant: string[]
  global: string[]
}

/** The tables a list's relations read, tenant tables and global ones (users). */
export function relationTables(specs: JoinSpec[]): MarkedTables {
  const tables = (tenant: boolean) => [...new Set(specs.filter((spec) => (spec.tenant !== false) === tenant).map((spec) => spec.table))]
  return { tenant: tables(true), global: tables(false) }
}

/**
 * The change mark of a list's relations (migration 20261126000200_change_marks) as one SQL text
 * expression: the writes counted so far to the relation tables' rows of the `organization` (an
 * SQL expression of a constant or a parameter, so that Postgres reads it once per statement),
 * then to the global ones. It moves with every committed write of a row any of the relations may
 * read; where it has not moved, none of them has changed.
 */
export function relationsMark(specs: JoinSpec[], organization: string): string {
  return changeMark(relationTables(specs), organization)
}

/** The change mark of these tables (relationsMark), for the `organization`'s rows of the tenant ones. */
export function changeMark({ tenant, global }: MarkedTables, organization: string): string {
  const writes = (owner: string, tables: string[]) => tables.length === 0 ? `''` :
    `(SELECT COALESCE(sum(changes), 0) FROM change_marks WHERE organization_id = ${owner} AND table_name IN (${tables.map((table) => `'${table}'`).join(', ')}))::text`
  return `${writes(organization, tenant)} || ':' || ${writes('0', global)}`
}

/**
 * Whether every table of these relations has its change-mark triggers, counting its writes by
 * organization (tenant tables) or under organization 0 (users): only then does relationsMark
 * stand for all of them. Read once per list's relations.
 */
export function marksCover(db: Knex, specs: JoinSpec[]): Promise<boolean> {
  return tablesMarked(db, relationTables(specs))
}

/** Whether every one of these tables has its change-mark triggers (marksCover). */
export async function tablesMarked(db: Knex, tables: MarkedTables): Promise<boolean> {
  const marked = await markedTables(db, tables)
  return [...tables.tenant, ...tables.global].every((table) => marked.has(table))
}

/** Which of these tables have all their change-mark triggers, counting by organization (tenant) or under organization 0 (global). */
export async function markedTables(db: Knex, { tenant, global }: MarkedTables): Promise<Set<string>> {
  const triggers = [...tenant.flatMap((table) => markTriggers(table, true)), ...global.flatMap((table) => markTriggers(table, false))]
  const { rows } = await db.raw(
    `SELECT t.tgname AS name, c.relname AS table, t.tgfoid::regproc::text AS fn FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND t.tgname = ANY(?)`,
    [triggers.map((trigger) => trigger.name)]
  )
  // A trigger of that name on its own table (not on another table of the same name's prefix).
  const found = new Map((rows as { name: string; table: string; fn: string }[]).filter((row) => row.name.startsWith(`${row.table}_marks_`)).map((row) => [row.name, row.fn]))
  const complete = (table: string, isTenant: boolean) => markTriggers(table, isTenant).every((trigger) => found.get(trigger.name) === trigger.fn)
  return new Set([...tenant.filter((table) => complete(table, true)), ...global.filter((table) => complete(table, false))])
}

/** The SELECT of one load; `ids` and `organizations` are SQL expressions of integer arrays. */
function relationSql({ spec, columns }: RelationLoad, ids: string, organizations: string) {
  const tenant = spec.tenant !== false
  const selection = [
    ...columns.filter((column) => !spec.computed?.[column]).map(quote),
    ...Object.entries(spec.computed ?? {}).map(([name, sql]) => `${sql} AS ${quote(name)}`),
    ...(tenant ? ['organization_id'] : [])
  ]
  return `SELECT ${selection.join(', ')} FROM ${quote(spec.table)} ${relationWhere(spec, '', `= ANY(${ids})`, `= ANY(${organizations})`)}`
}

/**
 * Every load of a page as one simple-protocol message of several statements: one write, one
 * wake-up of the database backend and one reply, instead of one per related table (the CPU
 * profile of joined lists put most of the process's time in those socket round trips). The ids
 * are integers checked by the caller, written as array literals; each statement is announced to
 * knex's query listeners on its own, as the separate statements would be.
 */
async function oneRoundTrip(db: Knex, loads: RelationLoad[]): Promise<Record<string, any>[][]> {
  const array = (values: unknown[]) => `'{${values.join(',')}}'::int[]`
  const statements = loads.map((load) => relationSql(load, array(load.ids), array(load.organizations)))
  const client = db.client as any
  const connection = await client.acquireConnection()
  try {
    for (const sql of statements) client.emit('query', { method: 'select', sql, bindings: [], __knexUid: connection.__knexUid })
    const results = await connection.query(statements.join(';\n'))
    return (Array.isArray(results) ? results : [results]).map((result: { rows: Record<string, any>[] }) => result.rows)
  } finally {
    await client.releaseConnection(connection)
  }
}

/** Statement names per SQL text, so that a page does not hash its statements again. */
const statementNames = new Map<string, string>()

/** One load as a named statement: parsed and planned once per connection, the ids as one array parameter. */
function loadNamed(db: Knex, load: RelationLoad): Promise<Record<string, any>[]> {
  const tenant = load.spec.tenant !== false
  const text = relationSql(load, '$1', '$2')
  let name = statementNames.get(text)
  if (!name) statementNames.set(text, (name = `crm join ${crypto.createHash('sha1').update(text).digest('hex').slice(0, 16)}`))
  return runStatement(db, name, text, tenant ? [load.ids, load.organizations] : [load.ids])
}

/** One load through knex's builder (the embedded database, or inside a transaction). */
function loadBuilt(db: Knex, { spec, columns, ids, organizations }: RelationLoad): Promise<Record<string, any>[]> {
  const tenant = spec.tenant !== false
  const selection: (string | Knex.Raw)[] = columns.filter((column) => !spec.computed?.[column])
  for (const [name, sql] of Object.entries(spec.computed ?? {})) selection.push(db.raw(`${sql} as ??`, [name]))
  const query = db(spec.table).select(selection).whereIn('id', ids as any[])
  if (tenant) query.select('organization_id').whereIn('organization_id', organizations as any[])
  if (tenant && !spec.withDeleted) query.whereNull('deleted_at')
  return query
}

function pick(record: Record<string, any>, columns: string[]) {
  const picked: Record<string, any> = {}
  for (const column of columns) picked[column] = record[column] ?? null
  return picked
}

export const USER_SUMMARY = ['id', 'first_name', 'last_name']
