import type { Knex } from 'knex'

/**
 * Name search compared search_fold(first || ' ' || last) on every candidate row: the trigram
 * index finds candidates, but each one is rechecked, and unaccent on every recheck made a short,
 * common term (3-4 letters, thousands of matches in a large organization) cost ~100 ms per
 * statement. The folded name is now stored (a generated column) and indexed, so the recheck
 * is a plain LIKE on stored text.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    "ALTER TABLE contacts ADD COLUMN search_name text GENERATED ALWAYS AS (search_fold(first_name || ' ' || coalesce(last_name, ''))) STORED"
  )
  await knex.raw('DROP INDEX IF EXISTS contacts_name_trgm')
  await knex.raw(
    'CREATE INDEX contacts_name_trgm ON contacts USING gin (organization_id, search_name gin_trgm_ops) WHERE deleted_at IS NULL'
  )
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS contacts_name_trgm')
  await knex.raw('ALTER TABLE contacts DROP COLUMN search_name')
  await knex.raw(
    "CREATE INDEX contacts_name_trgm ON contacts USING gin (organization_id, search_fold(first_name || ' ' || coalesce(last_name, '')) gin_trgm_ops) WHERE deleted_at IS NULL"
  )
}
