import type { Knex } from 'knex'
import { COUNTER_SLOT, addToCounters } from './lib/counters.js'

/**
 * The exact total of a name search for a 3-4 character term without counting its matches
 * (issue 14). Such a term's matches are the entries of contact_name_grams for (organization,
 * gram) (migration 20261123001500); counting them was an index-only scan of every entry (14,776
 * for 'ada' in the benchmark's large organization), about nine tenths of the search's cost.
 *
 * contact_name_gram_counts holds, per organization and gram, how many entries contact_name_grams
 * has, kept by triggers on that table in the same transaction as the change (as record_counts
 * keeps live rows per organization): the total is the sum of a few counter rows, read in the
 * search's own snapshot, so it is exact by the same rule as the entries themselves.
 *
 * Statement level: a bulk create adds one delta per organization and gram, not one per entry;
 * the deltas of one statement are applied in (organization, gram) order, so two statements
 * never take the same counter rows in opposite orders. Each backend adds to its own slot
 * (lib/counters.ts), so concurrent writers of one organization seldom wait for each other; a
 * gram's count is the sum of its slots. A counter that falls to zero stays, as a zero.
 * PGlite accepts one statement per query, so every statement is its own knex.raw.
 */
const GRAM_COUNTS = 'contact_name_gram_counts'

const add = addToCounters(GRAM_COUNTS, ['organization_id', 'gram'], 'entries')
const upsert = (rows: string, sign: '' | '-') => add(`
  SELECT organization_id, gram, ${COUNTER_SLOT}, ${sign}count(*) FROM ${rows}
  GROUP BY organization_id, gram ORDER BY organization_id, gram`)

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ${GRAM_COUNTS} (
      organization_id integer NOT NULL,
      gram text NOT NULL,
      slot smallint NOT NULL,
      entries bigint NOT NULL,
      PRIMARY KEY (organization_id, gram, slot)
    )`)
  const functions = {
    inserted: upsert('inserted_rows', ''),
    deleted: upsert('deleted_rows', '-'),
    truncated: `TRUNCATE ${GRAM_COUNTS}`
  }
  for (const [name, body] of Object.entries(functions)) {
    await knex.raw(`CREATE FUNCTION ${GRAM_COUNTS}_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${body}; RETURN NULL; END $$`)
  }
  await knex.raw(`
    CREATE TRIGGER contact_name_grams_count_inserted AFTER INSERT ON contact_name_grams
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION ${GRAM_COUNTS}_inserted()`)
  await knex.raw(`
    CREATE TRIGGER contact_name_grams_count_deleted AFTER DELETE ON contact_name_grams
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION ${GRAM_COUNTS}_deleted()`)
  await knex.raw(`
    CREATE TRIGGER contact_name_grams_count_truncated AFTER TRUNCATE ON contact_name_grams
    FOR EACH STATEMENT EXECUTE FUNCTION ${GRAM_COUNTS}_truncated()`)
  // The triggers exist before the existing entries are counted, so no write falls between the two.
  await knex.raw(`
    INSERT INTO ${GRAM_COUNTS} (organization_id, gram, slot, entries)
    SELECT organization_id, gram, 0, count(*) FROM contact_name_grams GROUP BY organization_id, gram`)
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ['inserted', 'deleted', 'truncated']) {
    await knex.raw(`DROP TRIGGER IF EXISTS contact_name_grams_count_${name} ON contact_name_grams`)
    await knex.raw(`DROP FUNCTION IF EXISTS ${GRAM_COUNTS}_${name}()`)
  }
  await knex.raw(`DROP TABLE IF EXISTS ${GRAM_COUNTS}`)
}
