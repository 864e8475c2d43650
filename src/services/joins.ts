import type { Knex } from 'knex'

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
 * Attaches related records to a page of rows with one query per relation, however long the
 * page: the batch-loading half of every fastJoin flag and every joined single read.
 */
export async function attachRelations<T extends Record<string, any>>(db: Knex, rows: T[], specs: JoinSpec[]): Promise<T[]> {
  if (rows.length === 0) return rows
  await Promise.all(specs.map((spec) => attachOne(db, rows, spec)))
  return rows
}

async function attachOne(db: Knex, rows: Record<string, any>[], spec: JoinSpec) {
  const ids = [...new Set(rows.map((row) => row[spec.from]).filter((id) => id !== null && id !== undefined))]
  const byKey = new Map<string, Record<string, any>>()
  if (ids.length > 0) {
    const selection: (string | Knex.Raw)[] = [...new Set(['id', ...spec.columns])].filter((c) => !spec.computed?.[c])
    for (const [name, sql] of Object.entries(spec.computed ?? {})) selection.push(db.raw(`${sql} as ??`, [name]))
    const query = db(spec.table).select(selection).whereIn('id', ids)
    if (spec.tenant !== false) {
      query.select('organization_id').whereIn('organization_id', [...new Set(rows.map((row) => row.organization_id))])
      if (!spec.withDeleted) query.whereNull('deleted_at')
    }
    for (const related of await query) {
      byKey.set(spec.tenant !== false ? `${related.organization_id}:${related.id}` : `${related.id}`, related)
    }
  }
  for (const row of rows) {
    const id = row[spec.from]
    const related = id === null || id === undefined
      ? undefined
      : byKey.get(spec.tenant !== false ? `${row.organization_id}:${id}` : `${id}`)
    ;(row as any)[spec.as] = related ? pick(related, spec.columns) : null
  }
}

const pick = (record: Record<string, any>, columns: string[]) =>
  Object.fromEntries(columns.map((column) => [column, record[column] ?? null]))

export const USER_SUMMARY = ['id', 'first_name', 'last_name']
