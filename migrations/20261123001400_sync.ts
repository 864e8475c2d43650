import type { Knex } from 'knex'
import { MILLISECONDS } from './lib/tenant-table.js'

/**
 * Sync and query features (issue 19):
 * - (organization_id, updated_at, id) on the large tables, deleted rows included: the keyset page
 *   of a sync ($withDeleted, $after {updated_at, id}) is one index range scan;
 * - custom-field filters: GIN jsonb_path_ops on custom_fields serves equality and $in (jsonb
 *   containment); number and date ranges are served by custom_field_ranges, one row per stored
 *   number or date value, kept by a trigger in the write's own transaction;
 * - API keys: scopes ('read' or 'write') and an optional expiry.
 * PGlite accepts one statement per query, so every raw statement stands alone.
 */
export const SYNC_TABLES = ['companies', 'contacts', 'deals', 'deal_products', 'activities', 'products']
export const CUSTOM_FIELD_TABLES = ['companies', 'contacts', 'deals']

const DATE_TEXT = `'^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`

/** The INSERT of a record's number and date values (`record`: NEW in the trigger, the table's alias in the backfill). */
const rangeRows = (record: string, tableName: string, from = 'FROM') => `
  INSERT INTO custom_field_ranges (organization_id, table_name, record_id, key, number_value, date_value)
  SELECT ${record}.organization_id, ${tableName}, ${record}.id, e.key,
         CASE WHEN jsonb_typeof(e.value) = 'number' THEN (e.value #>> '{}')::numeric END,
         CASE WHEN jsonb_typeof(e.value) = 'string' THEN e.value #>> '{}' END
  ${from} jsonb_each(${record}.custom_fields) AS e
  WHERE jsonb_typeof(e.value) = 'number' OR (jsonb_typeof(e.value) = 'string' AND (e.value #>> '{}') ~ ${DATE_TEXT})`

/** The number and date values of custom fields, kept by triggers (dropped by migration 20261127100000_one_read_path). */
export async function createCustomFieldRanges(knex: Knex): Promise<void> {
  // Dates are kept as their YYYY-MM-DD text, which sorts like the date (and never fails a cast).
  await knex.raw(`
    CREATE TABLE custom_field_ranges (
      organization_id integer NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      table_name text NOT NULL,
      record_id integer NOT NULL,
      key text NOT NULL,
      number_value numeric,
      date_value text,
      PRIMARY KEY (table_name, record_id, key)
    )`)
  await knex.raw('CREATE INDEX custom_field_ranges_number ON custom_field_ranges (organization_id, table_name, key, number_value) WHERE number_value IS NOT NULL')
  await knex.raw('CREATE INDEX custom_field_ranges_date ON custom_field_ranges (organization_id, table_name, key, date_value) WHERE date_value IS NOT NULL')
  await knex.raw(`
    CREATE FUNCTION custom_field_ranges_kept() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE' THEN
        DELETE FROM custom_field_ranges WHERE table_name = TG_TABLE_NAME AND record_id = NEW.id;
      END IF;
      ${rangeRows('NEW', 'TG_TABLE_NAME')};
      RETURN NULL;
    END $$`)
  for (const table of CUSTOM_FIELD_TABLES) {
    // Only writes that carry values reach the function: a plain insert or patch costs nothing.
    await knex.raw(`CREATE TRIGGER ${table}_custom_field_ranges_insert AFTER INSERT ON ${table}
      FOR EACH ROW WHEN (NEW.custom_fields <> '{}'::jsonb) EXECUTE FUNCTION custom_field_ranges_kept()`)
    await knex.raw(`CREATE TRIGGER ${table}_custom_field_ranges_update AFTER UPDATE OF custom_fields ON ${table}
      FOR EACH ROW WHEN (OLD.custom_fields IS DISTINCT FROM NEW.custom_fields) EXECUTE FUNCTION custom_field_ranges_kept()`)
    await knex.raw(rangeRows('t', `'${table}'`, `FROM ${table} AS t,`))
  }
}

export async function dropCustomFieldRanges(knex: Knex): Promise<void> {
  for (const table of CUSTOM_FIELD_TABLES) {
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_custom_field_ranges_update ON ${table}`)
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_custom_field_ranges_insert ON ${table}`)
  }
  await knex.raw('DROP FUNCTION IF EXISTS custom_field_ranges_kept()')
  await knex.raw('DROP TABLE IF EXISTS custom_field_ranges')
}

export async function up(knex: Knex): Promise<void> {
  for (const table of SYNC_TABLES) {
    await knex.raw(`CREATE INDEX ${table}_sync ON ${table} (organization_id, updated_at, id)`)
  }
  for (const table of CUSTOM_FIELD_TABLES) {
    // On the values alone: the planner combines it with an organization index (BitmapAnd); led by
    // organization_id (btree_gin) it was costed above the organization index and never chosen.
    await knex.raw(`CREATE INDEX ${table}_custom_fields ON ${table} USING gin (custom_fields jsonb_path_ops)`)
  }

  await createCustomFieldRanges(knex)

  await knex.schema.alterTable('api_keys', (t) => {
    t.specificType('scopes', 'text[]').notNullable().defaultTo(knex.raw(`'{write}'::text[]`))
    t.timestamp('expires_at', MILLISECONDS)
    t.check(`scopes <@ '{read,write}'::text[] AND cardinality(scopes) > 0`, [], 'api_keys_scopes_check')
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropChecks(['api_keys_scopes_check'])
    t.dropColumn('expires_at')
    t.dropColumn('scopes')
  })
  await dropCustomFieldRanges(knex)
  for (const table of CUSTOM_FIELD_TABLES) await knex.raw(`DROP INDEX IF EXISTS ${table}_custom_fields`)
  for (const table of SYNC_TABLES) await knex.raw(`DROP INDEX IF EXISTS ${table}_sync`)
}
