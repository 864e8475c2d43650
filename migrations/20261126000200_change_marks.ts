import type { Knex } from 'knex'
import { MARKED_GLOBAL_TABLES, MARKED_TENANT_TABLES, createMarkTriggers, dropMarkTriggers } from './lib/change-marks.js'
import { COUNTER_SLOT as SLOT, addToCounters } from './lib/counters.js'

/**
 * Change marks: how many writes each organization's rows of a table have had, as a number that
 * moves with every committed write. A wire page (record-texts.ts) keeps a record's text with the
 * versions of the related rows it was written from; where the mark of those relations' tables
 * has not moved since, no related row has changed, and the page need not probe each one (four
 * index probes per deal of a page of 50 were two thirds of the page's Postgres time).
 *
 * Statement-level triggers add 1 to a counter row per organization a write statement touched, in
 * the write's own transaction: a reader sees the count move exactly when the write commits, so two
 * reads that see the same sum saw the same committed rows of that table. (A sequence or a
 * timestamp would not do: values are taken at write time, and a later commit can carry an earlier
 * value.) Counters only grow and their rows are never deleted, so a sum never comes back to an
 * earlier value; TRUNCATE adds 1 for every organization.
 *
 * Each backend adds to its own slot, as record_counts does (lib/counters.ts), so concurrent
 * writers of one organization rarely wait on one row. Users are global: their writes count under
 * organization 0.
 *
 * The tables are those that list relations read (JoinSpec.table of a wire list), listed with their
 * triggers in lib/change-marks.ts; RecordService checks that a list's relation tables have these
 * triggers before it trusts a mark (test/performance/change-marks.test.ts checks every list
 * relation of the service has them).
 * PGlite accepts one statement per query, so every raw statement stands alone.
 */
const add = addToCounters('change_marks', ['organization_id', 'table_name'], 'changes')

const functions: Record<string, string> = {
  // One row per organization the statement touched, in organization order (a fixed lock order).
  tenant: add(`SELECT DISTINCT organization_id, TG_TABLE_NAME, ${SLOT}, 1 FROM changed_rows ORDER BY 1`),
  tenant_updated: add(`SELECT organization_id, TG_TABLE_NAME, ${SLOT}, 1
    FROM (SELECT organization_id FROM changed_rows UNION SELECT organization_id FROM old_rows) AS touched ORDER BY 1`),
  tenant_truncated: add(`SELECT id, TG_TABLE_NAME, ${SLOT}, 1 FROM organizations ORDER BY 1`),
  global: add(`SELECT 0, TG_TABLE_NAME, ${SLOT}, 1 WHERE EXISTS (SELECT 1 FROM changed_rows)`),
  global_truncated: add(`VALUES (0, TG_TABLE_NAME, ${SLOT}, 1)`)
}

const marked = () => [
  ...MARKED_TENANT_TABLES.map((table) => ({ table, tenant: true })),
  ...MARKED_GLOBAL_TABLES.map((table) => ({ table, tenant: false }))
]

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE change_marks (
      organization_id integer NOT NULL,
      table_name text NOT NULL,
      slot smallint NOT NULL,
      changes bigint NOT NULL,
      PRIMARY KEY (organization_id, table_name, slot)
    )`)
  for (const [name, body] of Object.entries(functions)) {
    await knex.raw(`CREATE FUNCTION change_marks_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${body}; RETURN NULL; END $$`)
  }
  for (const { table, tenant } of marked()) await createMarkTriggers(knex, table, tenant)
}

export async function down(knex: Knex): Promise<void> {
  for (const { table, tenant } of marked()) await dropMarkTriggers(knex, table, tenant)
  for (const name of Object.keys(functions)) await knex.raw(`DROP FUNCTION IF EXISTS change_marks_${name}()`)
  await knex.raw('DROP TABLE IF EXISTS change_marks')
}
