import crypto from 'node:crypto'
import type { Knex } from 'knex'
import { runNamed } from './record-service.js'

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
 * page: the batch-loading half of every fastJoin flag and every joined single read. Relations
 * on the same table loaded the same way (an activity's creator and assignee, both users) share
 * that one query.
 */
export async function attachRelations<T extends Record<string, any>>(db: Knex, rows: T[], specs: JoinSpec[]): Promise<T[]> {
  if (rows.length === 0) return rows
  const groups = new Map<string, JoinSpec[]>()
  for (const spec of specs) {
    const key = JSON.stringify([spec.table, spec.tenant !== false, Boolean(spec.withDeleted), spec.computed ?? {}])
    groups.set(key, [...(groups.get(key) ?? []), spec])
  }
  await Promise.all([...groups.values()].map((group) => attachGroup(db, rows, group)))
  return rows
}

async function attachGroup(db: Knex, rows: Record<string, any>[], group: JoinSpec[]) {
  const tenant = group[0].tenant !== false
  const ids = [...new Set(group.flatMap((spec) => rows.map((row) => row[spec.from])).filter((id) => id !== null && id !== undefined))]
  const byKey = new Map<string, Record<string, any>>()
  if (ids.length > 0) {
    const columns = [...new Set(['id', ...group.flatMap((spec) => spec.columns)])]
    const organizations = [...new Set(rows.map((row) => row.organization_id))]
    for (const related of await loadRelated(db, group[0], columns, ids, organizations)) {
      byKey.set(tenant ? `${related.organization_id}:${related.id}` : `${related.id}`, related)
    }
  }
  for (const spec of group) {
    for (const row of rows) {
      const id = row[spec.from]
      const related = id === null || id === undefined ? undefined : byKey.get(tenant ? `${row.organization_id}:${id}` : `${id}`)
      ;(row as any)[spec.as] = related ? pick(related, spec.columns) : null
    }
  }
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`

/**
 * The related rows of one relation group: on a Postgres server one named statement per relation
 * shape (parsed and planned once per connection, the ids as one array parameter), otherwise
 * knex's builder; the same rows either way.
 */
function loadRelated(db: Knex, spec: JoinSpec, columns: string[], ids: unknown[], organizations: unknown[]): Promise<Record<string, any>[]> {
  const { table, computed } = spec
  const tenant = spec.tenant !== false
  const live = tenant && !spec.withDeleted
  const plain = columns.filter((column) => !computed?.[column])
  if (db.client.config.client !== 'pg' || (db as any).isTransaction) {
    const selection: (string | Knex.Raw)[] = [...plain]
    for (const [name, sql] of Object.entries(computed ?? {})) selection.push(db.raw(`${sql} as ??`, [name]))
    const query = db(table).select(selection).whereIn('id', ids as any[])
    if (tenant) query.select('organization_id').whereIn('organization_id', organizations as any[])
    if (live) query.whereNull('deleted_at')
    return query
  }
  const selection = [
    ...plain.map(quote),
    ...Object.entries(computed ?? {}).map(([name, sql]) => `${sql} AS ${quote(name)}`),
    ...(tenant ? ['organization_id'] : [])
  ]
  const text =
    `SELECT ${selection.join(', ')} FROM ${quote(table)} WHERE id = ANY($1)` +
    (tenant ? ' AND organization_id = ANY($2)' : '') +
    (live ? ' AND deleted_at IS NULL' : '')
  const name = `crm join ${crypto.createHash('sha1').update(text).digest('hex').slice(0, 16)}`
  return runNamed(db, name, text, tenant ? [ids, organizations] : [ids])
}

const pick = (record: Record<string, any>, columns: string[]) =>
  Object.fromEntries(columns.map((column) => [column, record[column] ?? null]))

export const USER_SUMMARY = ['id', 'first_name', 'last_name']
