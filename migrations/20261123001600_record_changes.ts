import type { Knex } from 'knex'
import { SYNC_TABLES } from './20261123001400_sync.js'

/**
 * The sync order without an index on updated_at (issue 14, a regression of issue 19).
 *
 * Issue 19 served keyset pages ($after {updated_at, id}) from an index (organization_id,
 * updated_at, id) on each sync table. Every write changes updated_at, so with that index no update
 * could be HOT (heap-only): each patch wrote a new entry into every index of its table, the
 * trigram GIN indexes among them. A bulk patch of 100 activities fell from 621 to 82 requests
 * per second.
 *
 * record_changes holds, for every row of the sync tables, its (organization_id, updated_at),
 * kept equal to the row's own by statement-level triggers in the write's transaction; its index
 * (organization_id, table_name, updated_at, record_id) serves the keyset pages and any order or
 * filter on updated_at (RecordService joins it for those). An update of a record now writes its
 * own table's heap page (HOT when no other indexed column changes) and two index entries here.
 * Deleting a record removes its entry; ids are never reused, so no entry can outlive its row and
 * point at another.
 * PGlite accepts one statement per query, so every raw statement stands alone.
 */
const upsert = (source: string) => `
  INSERT INTO record_changes (table_name, record_id, organization_id, updated_at)
  SELECT TG_TABLE_NAME, r.id, r.organization_id, r.updated_at FROM ${source} AS r
  ON CONFLICT (table_name, record_id) DO UPDATE
    SET organization_id = EXCLUDED.organization_id, updated_at = EXCLUDED.updated_at
    WHERE (record_changes.organization_id, record_changes.updated_at) IS DISTINCT FROM (EXCLUDED.organization_id, EXCLUDED.updated_at)`

const functions: Record<string, string> = {
  inserted: upsert('inserted_rows'),
  updated: upsert('updated_rows'),
  // By primary key, one probe per row: a transition table has no statistics to plan a join on.
  deleted: `DELETE FROM record_changes WHERE table_name = TG_TABLE_NAME AND record_id = ANY (ARRAY(SELECT id FROM deleted_rows))`,
  truncated: `DELETE FROM record_changes WHERE table_name = TG_TABLE_NAME`
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE record_changes (
      table_name text NOT NULL,
      record_id integer NOT NULL,
      organization_id integer NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      PRIMARY KEY (table_name, record_id)
    )`)
  for (const [name, body] of Object.entries(functions)) {
    await knex.raw(`CREATE FUNCTION record_changes_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${body}; RETURN NULL; END $$`)
  }
  for (const table of SYNC_TABLES) {
    await knex.raw(`CREATE TRIGGER ${table}_changes_inserted AFTER INSERT ON ${table}
      REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION record_changes_inserted()`)
    await knex.raw(`CREATE TRIGGER ${table}_changes_updated AFTER UPDATE ON ${table}
      REFERENCING NEW TABLE AS updated_rows FOR EACH STATEMENT EXECUTE FUNCTION record_changes_updated()`)
    await knex.raw(`CREATE TRIGGER ${table}_changes_deleted AFTER DELETE ON ${table}
      REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION record_changes_deleted()`)
    await knex.raw(`CREATE TRIGGER ${table}_changes_truncated AFTER TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION record_changes_truncated()`)
    // The triggers exist before the existing rows are copied, so no write falls between the two.
    await knex.raw(`INSERT INTO record_changes (table_name, record_id, organization_id, updated_at)
      SELECT '${table}', id, organization_id, updated_at FROM ${table}`)
    await knex.raw(`DROP INDEX IF EXISTS ${table}_sync`)
  }
  await knex.raw('CREATE INDEX record_changes_page ON record_changes (organization_id, table_name, updated_at, record_id)')
}

export async function down(knex: Knex): Promise<void> {
  for (const table of SYNC_TABLES) {
    for (const name of Object.keys(functions)) await knex.raw(`DROP TRIGGER IF EXISTS ${table}_changes_${name} ON ${table}`)
    await knex.raw(`CREATE INDEX IF NOT EXISTS ${table}_sync ON ${table} (organization_id, updated_at, id)`)
  }
  for (const name of Object.keys(functions)) await knex.raw(`DROP FUNCTION IF EXISTS record_changes_${name}()`)
  await knex.raw('DROP TABLE IF EXISTS record_changes')
}
