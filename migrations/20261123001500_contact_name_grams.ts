import type { Knex } from 'knex'

/**
 * Contact name search for short terms (issue 14). A search by name must answer an exact total,
 * and a 3-4 letter term matches ~1.5 % of a large organization's names: through the trigram GIN
 * index every match costs a visit of its contact's heap page (for visibility and the sort key),
 * about 15,000 random page reads per search.
 *
 * contact_name_grams holds, for every live contact, each distinct 3- and 4-character substring of
 * its folded name (search_name) with the contact's sort key. For a term of 3 or 4 characters the
 * matches are exactly the entries of (organization_id, gram = term): the page is the first entries
 * of that range in (first_name, last_name, id) order, the total a count of the range, both
 * index-only scans (VACUUM keeps the visibility map set, as it does for every table).
 *
 * Kept in the write's own transaction by triggers on contacts: statement-level for inserts and
 * deletes (a bulk create adds its grams in one statement), row-level for the updates that change
 * a name or a contact's liveness. No foreign key: the contacts triggers remove the grams of
 * deleted rows, including rows removed by the organization's cascade.
 * PGlite accepts one statement per query, so every raw statement stands alone.
 */
export const GRAM_LENGTHS = [3, 4]
/** Above this many deleted contacts (an organization's cascade) the grams are deleted as one join. */
const BULK_DELETE = 10_000

/** The distinct grams of a text expression, as rows of `gram`. */
export const gramsIn = (text: string) =>
  `SELECT DISTINCT substr(${text}, i, n) AS gram
   FROM unnest('{${GRAM_LENGTHS.join(',')}}'::int[]) AS n, generate_series(1, length(${text}) - n + 1) AS i`

const gramsOf = (record: string) => gramsIn(`${record}.search_name`)

/** The INSERT of the grams of the live rows of `source` (a transition table, NEW, or contacts). */
const insertGrams = (source: string, alias: string) => `
  INSERT INTO contact_name_grams (organization_id, gram, first_name, last_name, contact_id)
  SELECT ${alias}.organization_id, g.gram, ${alias}.first_name, ${alias}.last_name, ${alias}.id
  FROM ${source} CROSS JOIN LATERAL (${gramsOf(alias)}) AS g
  WHERE ${alias}.deleted_at IS NULL`

/**
 * The grams of one row (a record variable), each found by its whole index key: one probe per
 * gram, whatever the number of contacts sharing the name.
 */
const deleteRowGrams = (row: string) => {
  const probe = (lastName: string) => `DELETE FROM contact_name_grams
    WHERE organization_id = ${row}.organization_id AND gram = ANY (ARRAY(${gramsOf(row)}))
      AND first_name = ${row}.first_name AND ${lastName} AND contact_id = ${row}.id`
  return `
  IF ${row}.deleted_at IS NULL AND ${row}.last_name IS NULL THEN ${probe('last_name IS NULL')};
  ELSIF ${row}.deleted_at IS NULL THEN ${probe(`last_name = ${row}.last_name`)};
  END IF`
}

/**
 * The grams of many deleted rows at once (an organization cleared): one hash join over the
 * grams. Nested loops are off for this statement only: planned on statistics older than the
 * rows being deleted, a nested loop would walk the organization's grams once per contact.
 */
const deleteManyGrams = (source: string) => `
  nested := current_setting('enable_nestloop');
  PERFORM set_config('enable_nestloop', 'off', true);
  DELETE FROM contact_name_grams AS k USING ${source} AS r
  WHERE r.deleted_at IS NULL AND k.organization_id = r.organization_id AND k.contact_id = r.id;
  PERFORM set_config('enable_nestloop', nested, true)`

/** An update that changes what a contact's grams hold: its name, its liveness or its organization. */
export const NAME_CHANGED = `OLD.search_name IS DISTINCT FROM NEW.search_name
      OR OLD.first_name IS DISTINCT FROM NEW.first_name OR OLD.last_name IS DISTINCT FROM NEW.last_name
      OR (OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL)
      OR OLD.organization_id IS DISTINCT FROM NEW.organization_id`

/** The functions and triggers that keep contact_name_grams in each write's transaction (replaced by 20261127120000). */
export async function createNameGramTriggers(knex: Knex) {
  const functions = {
    inserted: insertGrams('inserted_rows AS r', 'r'),
    // A transition table has no statistics: joined as a set, a delete of a few hundred contacts
    // may be planned as a scan of every gram. Up to BULK_DELETE rows, one indexed delete per row.
    deleted: `IF (SELECT count(*) FROM deleted_rows) > ${BULK_DELETE} THEN ${deleteManyGrams('deleted_rows')};
      ELSE FOR gone IN SELECT * FROM deleted_rows LOOP ${deleteRowGrams('gone')}; END LOOP;
      END IF`,
    updated: `${deleteRowGrams('OLD')};\n${insertGrams('(SELECT NEW.*) AS r', 'r')}`,
    truncated: 'TRUNCATE contact_name_grams'
  }
  for (const [name, body] of Object.entries(functions)) {
    await knex.raw(`CREATE FUNCTION contact_name_grams_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE gone contacts%ROWTYPE; nested text; BEGIN ${body}; RETURN NULL; END $$`)
  }
  await knex.raw(`
    CREATE TRIGGER contacts_name_grams_inserted AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_name_grams_inserted()`)
  await knex.raw(`
    CREATE TRIGGER contacts_name_grams_deleted AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_name_grams_deleted()`)
  // Only the updates that change what the grams hold reach the function: a patch of an e-mail
  // or a custom field costs nothing.
  await knex.raw(`
    CREATE TRIGGER contacts_name_grams_updated AFTER UPDATE OF first_name, last_name, deleted_at, organization_id ON contacts
    FOR EACH ROW WHEN (${NAME_CHANGED})
    EXECUTE FUNCTION contact_name_grams_updated()`)
  await knex.raw(`
    CREATE TRIGGER contacts_name_grams_truncated AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contact_name_grams_truncated()`)
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE contact_name_grams (
      organization_id integer NOT NULL,
      gram text NOT NULL,
      first_name text NOT NULL,
      last_name text,
      contact_id integer NOT NULL
    )`)
  await createNameGramTriggers(knex)
  // The triggers exist before the existing rows are copied, so no write falls between the two.
  await knex.raw(insertGrams('contacts AS c', 'c'))
  // The page's order after the range: the same (first_name, last_name, id) order as the search.
  await knex.raw('CREATE INDEX contact_name_grams_page ON contact_name_grams (organization_id, gram, first_name, last_name, contact_id)')
}

export async function dropNameGramTriggers(knex: Knex) {
  for (const name of ['inserted', 'deleted', 'updated', 'truncated']) {
    await knex.raw(`DROP TRIGGER IF EXISTS contacts_name_grams_${name} ON contacts`)
    await knex.raw(`DROP FUNCTION IF EXISTS contact_name_grams_${name}()`)
  }
}

export async function down(knex: Knex): Promise<void> {
  await dropNameGramTriggers(knex)
  await knex.raw('DROP TABLE IF EXISTS contact_name_grams')
}
