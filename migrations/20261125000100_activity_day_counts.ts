import type { Knex } from 'knex'
import { COUNTER_SLOT as SLOT, addToCounters } from './lib/counters.js'

/**
 * Exact live-activity counts per organization and start date, maintained by triggers in the same
 * transaction as the change (as record_counts is for whole organizations). The calendar's list,
 * GET /activities with a start_date range and nothing else, has an exact total to send: summing
 * seven days here reads a few dozen rows where counting the week on the table reads every one of
 * its activities (about 4,800 a week in the benchmark's large organization). RecordService reads
 * it only when a list's count is exactly "live activities of one organization with start_date in
 * a range"; any other filter is counted on the table.
 *
 * Each backend adds to its own slot (pg_backend_pid() % 16), so concurrent writers of one day do
 * not queue on one counter row; a day's count is the sum of its slots. No foreign key to
 * organizations, for the reason record_counts gives.
 */
export const DAY_COUNTS = 'activity_day_counts'

const upsert = addToCounters(DAY_COUNTS, ['organization_id', 'day'], 'live')

/** The counts of the live, dated activities of the organizations `where` selects, from the table itself. */
export const recountedDays = (where = 'true') => `
  INSERT INTO ${DAY_COUNTS} (organization_id, day, slot, live)
  SELECT organization_id, start_date, 0, count(*) FROM activities
  WHERE deleted_at IS NULL AND start_date IS NOT NULL AND (${where})
  GROUP BY organization_id, start_date`

// PGlite accepts one statement per query, so every statement is its own knex.raw.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ${DAY_COUNTS} (
      organization_id integer NOT NULL,
      day date NOT NULL,
      slot smallint NOT NULL,
      live bigint NOT NULL,
      PRIMARY KEY (organization_id, day, slot)
    )`)

  // Statement level: a bulk insert or delete adds one delta per organization and day.
  for (const [fn, rows, sign] of [['activity_day_counts_inserted', 'inserted_rows', ''], ['activity_day_counts_deleted', 'deleted_rows', '-']]) {
    await knex.raw(`
      CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${upsert(`SELECT organization_id, start_date, ${SLOT}, ${sign}count(*) FROM ${rows}
          WHERE deleted_at IS NULL AND start_date IS NOT NULL GROUP BY organization_id, start_date ORDER BY organization_id, start_date`)};
        RETURN NULL;
      END $$`)
  }
  // Row level, and only when an activity enters or leaves the live set or moves to another day
  // (or organization): marking activities done, the commonest patch, never reaches it.
  await knex.raw(`
    CREATE FUNCTION activity_day_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.deleted_at IS NULL AND OLD.start_date IS NOT NULL THEN
        ${upsert(`VALUES (OLD.organization_id, OLD.start_date, ${SLOT}, -1)`)};
      END IF;
      IF NEW.deleted_at IS NULL AND NEW.start_date IS NOT NULL THEN
        ${upsert(`VALUES (NEW.organization_id, NEW.start_date, ${SLOT}, 1)`)};
      END IF;
      RETURN NULL;
    END $$`)
  await knex.raw(`
    CREATE FUNCTION activity_day_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM ${DAY_COUNTS};
      RETURN NULL;
    END $$`)

  // Named *_count_* like record_counts' triggers: the benchmark's seed recognises them as counters it recomputes.
  await knex.raw(`
    CREATE TRIGGER activities_day_count_inserted AFTER INSERT ON activities
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_day_counts_inserted()`)
  await knex.raw(`
    CREATE TRIGGER activities_day_count_deleted AFTER DELETE ON activities
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION activity_day_counts_deleted()`)
  await knex.raw(`
    CREATE TRIGGER activities_day_count_updated AFTER UPDATE OF deleted_at, organization_id, start_date ON activities
    FOR EACH ROW WHEN ((OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL)
      OR OLD.organization_id IS DISTINCT FROM NEW.organization_id
      OR OLD.start_date IS DISTINCT FROM NEW.start_date)
    EXECUTE FUNCTION activity_day_counts_updated()`)
  await knex.raw(`
    CREATE TRIGGER activities_day_count_truncated AFTER TRUNCATE ON activities
    FOR EACH STATEMENT EXECUTE FUNCTION activity_day_counts_truncated()`)
  // The triggers exist (and lock out writers) before the existing rows are counted.
  await knex.raw(recountedDays())
}

export async function down(knex: Knex): Promise<void> {
  for (const trigger of ['inserted', 'deleted', 'updated', 'truncated']) {
    await knex.raw(`DROP TRIGGER IF EXISTS activities_day_count_${trigger} ON activities`)
    await knex.raw(`DROP FUNCTION IF EXISTS activity_day_counts_${trigger}()`)
  }
  await knex.raw(`DROP TABLE IF EXISTS ${DAY_COUNTS}`)
}
