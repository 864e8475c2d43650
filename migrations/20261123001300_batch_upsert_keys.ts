import type { Knex } from 'knex'

// Keys of the batch upsert (issue 19). external_id is a client-chosen id, unique per
// organization among live rows, on the six batch resources. The natural keys (a contact's
// e-mail or phone, a company's website domain or name) are not unique, since duplicates are
// allowed and can be merged, so they get plain indexes that serve the upsert's match; the
// upsert serializes on them with a transaction-level advisory lock per key instead.
// PGlite runs one statement per call, hence one knex.raw per statement.
const TABLES = ['companies', 'contacts', 'deals', 'deal_products', 'activities', 'products']

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.raw(`ALTER TABLE ${table} ADD COLUMN external_id text`)
    await knex.raw(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_external_id_length CHECK (char_length(external_id) BETWEEN 1 AND 200)`)
    await knex.raw(
      `CREATE UNIQUE INDEX ${table}_external_id_live_unique ON ${table} (organization_id, external_id) WHERE deleted_at IS NULL AND external_id IS NOT NULL`
    )
  }
  // The host of a URL, lower-case, without user, port or a leading 'www.': what "the same website"
  // means. (No question mark in the SQL: knex.raw would read it as a binding; chr(63) is '?'.)
  await knex.raw(`
    CREATE FUNCTION website_domain(url text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT
    AS $$ SELECT nullif(regexp_replace(split_part(regexp_replace(
      split_part(split_part(split_part(regexp_replace(lower(url), '^[a-z][a-z0-9+.-]*://', ''), '/', 1), chr(63), 1), '#', 1),
      '^[^@]*@', ''), ':', 1), '^www[.]', ''), '') $$`)
  await knex.raw('CREATE INDEX companies_website_domain ON companies (organization_id, website_domain(website)) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX companies_lower_name ON companies (organization_id, lower(name)) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX contacts_lower_email ON contacts (organization_id, lower(email)) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX contacts_phone_key ON contacts (organization_id, phone_country_code, phone_normalized) WHERE deleted_at IS NULL')
}

export async function down(knex: Knex): Promise<void> {
  for (const index of ['companies_website_domain', 'companies_lower_name', 'contacts_lower_email', 'contacts_phone_key']) {
    await knex.raw(`DROP INDEX IF EXISTS ${index}`)
  }
  await knex.raw('DROP FUNCTION IF EXISTS website_domain(text)')
  for (const table of TABLES) {
    await knex.raw(`DROP INDEX IF EXISTS ${table}_external_id_live_unique`)
    await knex.raw(`ALTER TABLE ${table} DROP COLUMN external_id`)
  }
}
