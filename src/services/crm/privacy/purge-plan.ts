import type { Knex } from 'knex'

/**
 * What a purge of a table's rows does to a foreign key pointing at them:
 * - clear: the referencing columns are nullable: they are set to null (the referencing record
 *   stays and no longer names the purged one);
 * - delete: a table without soft delete (a history of the row: automation runs) whose reference
 *   is required: its rows go with the purged one;
 * - wait: a soft-deleted table whose reference is required: the purged row waits until every
 *   row referencing it has gone itself (a deleted contact keeps while a conversation of theirs is
 *   live, and goes once the conversation has been purged).
 * Keys the database follows itself (ON DELETE CASCADE or SET NULL) are not listed.
 */
export interface PurgedReference {
  table: string
  /** The referencing column that holds the purged row's id. */
  column: string
  /** For 'clear': the columns of the key set to null (all of them but organization_id). */
  cleared: string[]
  action: 'clear' | 'delete' | 'wait'
}

export interface PurgedTable {
  name: string
  references: PurgedReference[]
  /** The rows name a stored file (storage_key), deleted after the rows. */
  storageKey: boolean
}

interface ForeignKey {
  referencing: string
  referenced: string
  on_delete: string
  columns: string[]
  referenced_columns: string[]
}

interface Column {
  table_name: string
  column_name: string
  is_nullable: string
}

const plans = new WeakMap<Knex, Promise<PurgedTable[]>>()

/**
 * Every tenant table with soft delete, from the database's catalogue (so a table added later is
 * purged the day it exists), with the foreign keys pointing at it, ordered so that a table
 * comes before the tables it references: its rows go first, and free theirs. Read once per pool.
 */
export function purgePlan(db: Knex): Promise<PurgedTable[]> {
  let plan = plans.get(db)
  if (!plan) {
    plan = readPlan(db)
    plan.catch(() => plans.delete(db))
    plans.set(db, plan)
  }
  return plan
}

async function readPlan(db: Knex): Promise<PurgedTable[]> {
  const columns: Column[] = (await db.raw(
    `SELECT c.table_name, c.column_name, c.is_nullable FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`
  )).rows
  const keys: ForeignKey[] = (await db.raw(
    `SELECT r.relname AS referencing, f.relname AS referenced, c.confdeltype AS on_delete,
            array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) AS columns,
            array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i) AS referenced_columns
       FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid JOIN pg_class f ON f.oid = c.confrelid
      WHERE c.contype = 'f' AND r.relnamespace = current_schema()::regnamespace`
  )).rows
  const columnsOf = new Map<string, Map<string, Column>>()
  for (const column of columns) {
    if (!columnsOf.has(column.table_name)) columnsOf.set(column.table_name, new Map())
    columnsOf.get(column.table_name)!.set(column.column_name, column)
  }
  const has = (table: string, column: string) => Boolean(columnsOf.get(table)?.has(column))
  const purged = [...columnsOf.keys()].filter((table) => has(table, 'deleted_at') && has(table, 'organization_id')).sort()
  const tables = purged.map((name): PurgedTable => ({
    name,
    storageKey: has(name, 'storage_key'),
    references: keys.filter((key) => key.referenced === name && ['a', 'r'].includes(key.on_delete)).map((key) => referenceOf(key, columnsOf))
  }))
  return referencingFirst(tables)
}

function referenceOf(key: ForeignKey, columnsOf: Map<string, Map<string, Column>>): PurgedReference {
  const column = key.columns[key.referenced_columns.indexOf('id')]
  const cleared = key.columns.filter((name) => name !== 'organization_id')
  const nullable = cleared.every((name) => columnsOf.get(key.referencing)?.get(name)?.is_nullable === 'YES')
  const softDeleted = columnsOf.get(key.referencing)?.has('deleted_at')
  return { table: key.referencing, column, cleared, action: nullable ? 'clear' : softDeleted ? 'wait' : 'delete' }
}

/** The tables in an order where each comes before every purged table it references (a reference to itself aside). */
function referencingFirst(tables: PurgedTable[]): PurgedTable[] {
  const byName = new Map(tables.map((table) => [table.name, table]))
  const ordered: PurgedTable[] = []
  const placed = new Set<string>()
  const visiting = new Set<string>()
  const place = (table: PurgedTable) => {
    if (placed.has(table.name) || visiting.has(table.name)) return
    visiting.add(table.name)
    // Tables referencing this one go first.
    for (const reference of table.references) {
      const referencing = byName.get(reference.table)
      if (referencing && referencing !== table) place(referencing)
    }
    visiting.delete(table.name)
    placed.add(table.name)
    ordered.push(table)
  }
  for (const table of tables) place(table)
  return ordered
}
