import type { Knex } from 'knex'
import * as grams from './20261123001500_contact_name_grams.js'
import * as gramCounts from './20261126000300_contact_name_gram_counts.js'
import * as renameLocks from './20261127110100_name_gram_rename_locks.js'
import * as indexBehind from './20261127120000_contact_name_index_behind.js'

/**
 * Search on Postgres's own indexes (src/engine/search.ts): the contact name grams, their counts,
 * the pending contacts and their drain go, with every trigger they put on contacts. A search
 * finds its matches through the trigram indexes and reads its ordered groups from B-trees in
 * the "C" collation on the live rows, whatever the database's locale:
 * - contacts: the folded full name (first name, or the whole name, starts with the term), the
 *   folded last name then full name, the lower-cased e-mail, the phone digits within their
 *   country code;
 * - companies and products: the folded name, with trigram indexes on the folded name so that an
 *   accent need not be typed.
 * The full-name index carries last_name, so the walk of the other matches, which checks that the
 * last name does not start with the term, reads nothing but the index.
 */
const INDEXES = [
  `CREATE INDEX contacts_search_name_order ON contacts (organization_id, search_name COLLATE "C", id) INCLUDE (last_name) WHERE deleted_at IS NULL`,
  `CREATE INDEX contacts_search_last_name_order ON contacts (organization_id, (search_fold(coalesce(last_name, ''))) COLLATE "C", search_name COLLATE "C", id) WHERE deleted_at IS NULL`,
  `CREATE INDEX contacts_search_email_order ON contacts (organization_id, (lower(email)) COLLATE "C", id) WHERE deleted_at IS NULL`,
  `CREATE INDEX contacts_search_phone_order ON contacts (organization_id, phone_country_code, phone_normalized COLLATE "C", id) WHERE deleted_at IS NULL`,
  `CREATE INDEX companies_search_name_order ON companies (organization_id, (search_fold(name)) COLLATE "C", id) WHERE deleted_at IS NULL`,
  `CREATE INDEX products_search_name_order ON products (organization_id, (search_fold(name)) COLLATE "C", id) WHERE deleted_at IS NULL`
]

const TRIGRAMS = {
  companies_search_trgm: {
    folded: 'CREATE INDEX companies_search_trgm ON companies USING gin (organization_id, search_fold(name) gin_trgm_ops, lower(website) gin_trgm_ops) WHERE deleted_at IS NULL',
    lowered: 'CREATE INDEX companies_search_trgm ON companies USING gin (organization_id, lower(name) gin_trgm_ops, lower(website) gin_trgm_ops) WHERE deleted_at IS NULL'
  },
  products_search_trgm: {
    folded: 'CREATE INDEX products_search_trgm ON products USING gin (organization_id, search_fold(name) gin_trgm_ops, lower(sku) gin_trgm_ops) WHERE deleted_at IS NULL',
    lowered: 'CREATE INDEX products_search_trgm ON products USING gin (organization_id, lower(name) gin_trgm_ops, lower(sku) gin_trgm_ops) WHERE deleted_at IS NULL'
  }
}

const indexName = (definition: string) => /CREATE INDEX (\w+)/.exec(definition)![1]

// PGlite runs one statement per query, so every statement is its own knex.raw.
export async function up(knex: Knex): Promise<void> {
  for (const name of ['inserted', 'deleted', 'updated', 'truncated']) {
    await knex.raw(`DROP TRIGGER IF EXISTS contacts_name_pending_${name} ON contacts`)
    await knex.raw(`DROP FUNCTION IF EXISTS contact_name_pending_${name}()`)
  }
  await knex.raw('DROP FUNCTION IF EXISTS contact_name_index_drain(integer)')
  await knex.raw('DROP TABLE IF EXISTS contact_name_pending')
  await grams.dropNameGramTriggers(knex)
  await gramCounts.down(knex)
  await grams.down(knex)
  for (const definition of INDEXES) await knex.raw(definition)
  for (const [name, { folded }] of Object.entries(TRIGRAMS)) {
    await knex.raw(`DROP INDEX IF EXISTS ${name}`)
    await knex.raw(folded)
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [name, { lowered }] of Object.entries(TRIGRAMS)) {
    await knex.raw(`DROP INDEX IF EXISTS ${name}`)
    await knex.raw(lowered)
  }
  for (const definition of INDEXES) await knex.raw(`DROP INDEX IF EXISTS ${indexName(definition)}`)
  await grams.up(knex)
  await renameLocks.up(knex)
  await gramCounts.up(knex)
  await indexBehind.up(knex)
}
