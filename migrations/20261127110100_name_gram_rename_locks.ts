import type { Knex } from 'knex'
import { COUNTER_SLOT } from './lib/counters.js'

/**
 * A contact's rename (or soft delete) removes its old grams and adds its new ones in two
 * statements, and each takes locks on its grams' counters (contact_name_gram_counts, this
 * backend's slot): two renames in one slot could each hold a counter the other needed next, and
 * Postgres broke the deadlock by failing one of them (a 409 to the client). The trigger now locks
 * every counter both statements will change, old and new grams together, in one ordered pass
 * first (creating the missing ones), so concurrent renames wait for each other instead.
 */
const gramsOf = (record: string) =>
  `SELECT substr(${record}.search_name, i, n) AS gram
   FROM unnest('{3,4}'::int[]) AS n, generate_series(1, length(${record}.search_name) - n + 1) AS i`

const deleteRowGrams = (row: string) => {
  const probe = (lastName: string) => `DELETE FROM contact_name_grams
    WHERE organization_id = ${row}.organization_id AND gram = ANY (ARRAY(SELECT DISTINCT row_grams.gram FROM (${gramsOf(row)}) AS row_grams))
      AND first_name = ${row}.first_name AND ${lastName} AND contact_id = ${row}.id`
  return `
  IF ${row}.deleted_at IS NULL AND ${row}.last_name IS NULL THEN ${probe('last_name IS NULL')};
  ELSIF ${row}.deleted_at IS NULL THEN ${probe(`last_name = ${row}.last_name`)};
  END IF`
}

const insertNewGrams = `
  INSERT INTO contact_name_grams (organization_id, gram, first_name, last_name, contact_id)
  SELECT NEW.organization_id, g.gram, NEW.first_name, NEW.last_name, NEW.id
  FROM (SELECT DISTINCT new_grams.gram FROM (${gramsOf('NEW')}) AS new_grams) AS g
  WHERE NEW.deleted_at IS NULL`

// One ordered upsert: it locks the counters that exist and creates (at zero) and locks those that
// do not, in (organization, gram) order; WHERE false locks a conflicting row without writing it.
const lockCounters = `
  INSERT INTO contact_name_gram_counts AS c (organization_id, gram, slot, entries)
  SELECT k.organization_id, k.gram, ${COUNTER_SLOT}, 0 FROM (
    SELECT OLD.organization_id, old_grams.gram FROM (${gramsOf('OLD')}) AS old_grams WHERE OLD.deleted_at IS NULL
    UNION SELECT NEW.organization_id, new_grams.gram FROM (${gramsOf('NEW')}) AS new_grams WHERE NEW.deleted_at IS NULL
  ) AS k(organization_id, gram)
  ORDER BY k.organization_id, k.gram
  ON CONFLICT (organization_id, gram, slot) DO UPDATE SET entries = c.entries WHERE false`

const definition = (body: string) => `CREATE OR REPLACE FUNCTION contact_name_grams_updated() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN ${body}; RETURN NULL; END $$`

export async function up(knex: Knex): Promise<void> {
  await knex.raw(definition(`${lockCounters};\n${deleteRowGrams('OLD')};\n${insertNewGrams}`))
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(definition(`${deleteRowGrams('OLD')};\n${insertNewGrams}`))
}
