import type { Knex } from 'knex'

/** A column of a table, with its type as pg_type names it. */
export interface Column {
  name: string
  type: string
}

export const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`

/** A text as an SQL literal (for configuration a declaration writes into its SQL). */
export const sqlText = (text: string) => `'${text.replace(/'/g, "''")}'`

/** The ISO 8601 text the API sends for a timestamp, in UTC with milliseconds. */
export const ISO_TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`

/**
 * Each database's tables and their columns, read in one statement the first time (the services
 * read it at start-up): the schema changes only by migrations, which run before.
 */
const catalogues = new WeakMap<Knex, Promise<Map<string, Column[]>>>()

/** The columns of `table` in the database `db`, the catalogue read through `reader` (a transaction of it, or itself) the first time. */
export async function columnsOf(db: Knex, table: string, reader: Knex = db): Promise<Column[]> {
  let catalogue = catalogues.get(db)
  if (!catalogue) {
    catalogue = readCatalogue(reader)
    // A failed read (the database was away) is tried again by the next caller.
    catalogue.catch(() => catalogues.delete(db))
    catalogues.set(db, catalogue)
  }
  const columns = (await catalogue).get(table)
  if (!columns) throw new Error(`the database has no table ${table}: are its migrations applied?`)
  return columns
}

async function readCatalogue(db: Knex): Promise<Map<string, Column[]>> {
  const { rows } = await db.raw(
    `SELECT c.relname AS table, a.attname AS name, t.typname AS type
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       JOIN pg_type t ON t.oid = a.atttypid
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v')
      ORDER BY c.relname, a.attnum`
  )
  const tables = new Map<string, Column[]>()
  for (const { table, name, type } of rows as (Column & { table: string })[]) {
    const columns = tables.get(table) ?? []
    columns.push({ name, type })
    tables.set(table, columns)
  }
  return tables
}

/**
 * A column's value as the API writes it, in SQL: a timestamp as ISO 8601 text in UTC with
 * milliseconds, an exact decimal as its text (Postgres's JSON would write a number), anything
 * else as Postgres writes it in JSON (dates as YYYY-MM-DD, times as HH:MM:SS, integers as numbers).
 */
export function renderedColumn(column: Column, ref: string): string {
  switch (column.type) {
    case 'timestamptz':
      return `to_char(${ref} AT TIME ZONE 'UTC', ${ISO_TIMESTAMP})`
    case 'numeric':
      return `${ref}::text`
    default:
      return ref
  }
}
