import type { Knex } from 'knex'
import { COUNTER_SLOT as SLOT, addToCounters } from './lib/counters.js'

/**
 * Exact live-row counts per organization for the large tables, maintained by triggers in the
 * same transaction as the change, so that the envelope's total of an unfiltered list is a read
 * of a few rows instead of a count over a million. RecordService reads it only when a list's
 * count is exactly "live rows of one organization"; every other count still runs on the table.
 *
 * Each backend adds to its own slot (pg_backend_pid() % 16), so concurrent writers of one
 * organization do not queue on one counter row; the total is the sum of the slots.
 * No foreign key to organizations: deleting an organization cascades into these tables, and
 * their delete trigger must still be able to record the change after the organization is gone.
 */
export const COUNTED_TABLES = ['companies', 'contacts', 'deals', 'activities']

const upsert = addToCounters('record_counts', ['organization_id', 'table_name'], 'live')

// PGlite accepts one statement per query, so every statement is its own knex.raw.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE record_counts (
      organization_id integer NOT NULL,
      table_name text NOT NULL,
      slot smallint NOT NULL,
      live bigint NOT NULL,
      PRIMARY KEY (organization_id, table_name, slot)
    )`)

  // Statement level: a bulk insert or delete adds one delta per organization, not one per row.
  await knex.raw(`
    CREATE FUNCTION record_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      ${upsert(`SELECT organization_id, TG_TABLE_NAME, ${SLOT}, count(*) FROM inserted_rows
        WHERE deleted_at IS NULL GROUP BY organization_id ORDER BY organization_id`)};
      RETURN NULL;
    END $$`)
  await knex.raw(`
    CREATE FUNCTION record_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      ${upsert(`SELECT organization_id, TG_TABLE_NAME, ${SLOT}, -count(*) FROM deleted_rows
        WHERE deleted_at IS NULL GROUP BY organization_id ORDER BY organization_id`)};
      RETURN NULL;
    END $$`)
  // Row level, and only when a row enters or leaves the live set (soft delete, restore):
  // ordinary patches never reach it.
  await knex.raw(`
    CREATE FUNCTION record_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.deleted_at IS NULL THEN
        ${upsert(`VALUES (OLD.organization_id, TG_TABLE_NAME, ${SLOT}, -1)`)};
      END IF;
      IF NEW.deleted_at IS NULL THEN
        ${upsert(`VALUES (NEW.organization_id, TG_TABLE_NAME, ${SLOT}, 1)`)};
      END IF;
      RETURN NULL;
    END $$`)

  await knex.raw(`
    CREATE FUNCTION record_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM record_counts WHERE table_name = TG_TABLE_NAME;
      RETURN NULL;
    END $$`)

  for (const table of COUNTED_TABLES) {
    await knex.raw(`
      CREATE TRIGGER ${table}_count_inserted AFTER INSERT ON ${table}
      REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION record_counts_inserted()`)
    await knex.raw(`
      CREATE TRIGGER ${table}_count_deleted AFTER DELETE ON ${table}
      REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION record_counts_deleted()`)
    await knex.raw(`
      CREATE TRIGGER ${table}_count_updated AFTER UPDATE OF deleted_at, organization_id ON ${table}
      FOR EACH ROW WHEN ((OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL)
        OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
      EXECUTE FUNCTION record_counts_updated()`)
    await knex.raw(`
      CREATE TRIGGER ${table}_count_truncated AFTER TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION record_counts_truncated()`)
    // The triggers exist (and lock out writers) before the existing rows are counted.
    await knex.raw(`
      INSERT INTO record_counts (organization_id, table_name, slot, live)
      SELECT organization_id, '${table}', 0, count(*) FROM ${table} WHERE deleted_at IS NULL GROUP BY organization_id`)
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of COUNTED_TABLES) {
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_inserted ON ${table}`)
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_deleted ON ${table}`)
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_updated ON ${table}`)
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_truncated ON ${table}`)
  }
  for (const fn of ['record_counts_inserted', 'record_counts_deleted', 'record_counts_updated', 'record_counts_truncated']) {
    await knex.raw(`DROP FUNCTION IF EXISTS ${fn}()`)
  }
  await knex.raw('DROP TABLE IF EXISTS record_counts')
}
