import type { Knex } from 'knex'
import { StartupError } from '../startup.js'

/**
 * State the engine keeps beside the data with triggers in the writer's transaction. A resource
 * declares the families it relies on (RecordServiceOptions.triggerFamilies); its service checks at
 * start-up that the database has every trigger of them, since a missing one would not fail a
 * request but answer a wrong total or miss search matches.
 *
 * - record_counts: the live records of each organization, so a whole list's exact total is a
 *   read of a few rows instead of a count over a large organization (migration 20261121000900).
 */
export const TRIGGER_FAMILIES = {
  record_counts: (table: string) => ['inserted', 'deleted', 'updated', 'truncated'].map((event) => ({ table, name: `${table}_count_${event}` }))
} as const

export type TriggerFamily = keyof typeof TRIGGER_FAMILIES

/** A database that lacks a declared trigger family: the service must not start on it. */
export class MissingTriggers extends StartupError {}

/** Throws MissingTriggers naming the first family of `table` whose triggers the database lacks. */
export async function requireTriggerFamilies(db: Knex, table: string, families: readonly TriggerFamily[]) {
  if (families.length === 0) return
  const expected = families.flatMap((family) => TRIGGER_FAMILIES[family](table).map((trigger) => ({ family, ...trigger })))
  const { rows } = await db.raw(
    `SELECT c.relname AS table, t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND t.tgname = ANY(?)`,
    [expected.map((trigger) => trigger.name)]
  )
  const present = new Set((rows as { table: string; name: string }[]).map((row) => `${row.table}.${row.name}`))
  const missing = expected.find((trigger) => !present.has(`${trigger.table}.${trigger.name}`))
  if (missing) {
    throw new MissingTriggers(`The database lacks the ${missing.family} triggers of ${table} (${missing.name} on ${missing.table}): apply the migrations (npm run migrate)`)
  }
}
