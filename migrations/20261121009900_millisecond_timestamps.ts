import type { Knex } from 'knex'

/**
 * The API speaks ISO 8601 with milliseconds. Stored with Postgres's default microseconds, a
 * timestamp read back and used as a filter ({created_at: {$lte: <a returned created_at>}})
 * could miss the very row it came from. Every timestamp of the service keeps milliseconds.
 */
const timestampColumns = (knex: Knex, precision: number) =>
  knex('information_schema.columns')
    .select('table_name', 'column_name')
    .where({ table_schema: knex.raw('current_schema()'), data_type: 'timestamp with time zone' })
    .whereNot('datetime_precision', precision)
    .whereNotIn('table_name', ['knex_migrations', 'knex_migrations_lock'])
    .orderBy(['table_name', 'column_name'])

/**
 * Postgres refuses to change the type of a column a trigger's WHEN clause reads, so the
 * table's triggers are dropped and re-created from their own definitions around the change.
 */
async function alterTimestamps(knex: Knex, precision: number, type: string) {
  const columns = await timestampColumns(knex, precision)
  const tables = [...new Set(columns.map((c: { table_name: string }) => c.table_name))]
  for (const table of tables) {
    const { rows: triggers } = await knex.raw(
      'SELECT tgname, pg_get_triggerdef(oid) AS definition FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal',
      [table]
    )
    for (const trigger of triggers) await knex.raw('DROP TRIGGER ?? ON ??', [trigger.tgname, table])
    for (const { column_name } of columns.filter((c: { table_name: string }) => c.table_name === table)) {
      await knex.raw(`ALTER TABLE ?? ALTER COLUMN ?? TYPE ${type}`, [table, column_name])
    }
    for (const trigger of triggers) await knex.raw(trigger.definition)
  }
}

export async function up(knex: Knex): Promise<void> {
  await alterTimestamps(knex, 3, 'timestamptz(3)')
}

export async function down(knex: Knex): Promise<void> {
  await alterTimestamps(knex, 6, 'timestamptz')
}
