import type { Knex } from 'knex'

// PGlite runs one statement per query, so every raw statement stands alone.
export async function up(knex: Knex): Promise<void> {
  // unaccent() is only STABLE (it reads a dictionary chosen through search_path), so it cannot
  // appear in an index. Naming the dictionary explicitly makes the result fixed, which lets this
  // wrapper be IMMUTABLE: the one text-folding function of search (lower case, no accents).
  await knex.raw(`
    CREATE OR REPLACE FUNCTION search_fold(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, value)) $$
  `)
  // Contact name search matches first name, last name and "first last" with one expression.
  await knex.raw(
    `CREATE INDEX contacts_name_trgm ON contacts USING gin (organization_id, search_fold(first_name || ' ' || coalesce(last_name, '')) gin_trgm_ops) WHERE deleted_at IS NULL`
  )
  await knex.raw('CREATE INDEX contacts_email_trgm ON contacts USING gin (organization_id, lower(email) gin_trgm_ops) WHERE deleted_at IS NULL')
  await knex.raw(
    'CREATE INDEX contacts_phone_trgm ON contacts USING gin (organization_id, phone_country_code, phone_normalized gin_trgm_ops) WHERE deleted_at IS NULL'
  )
  await knex.raw('CREATE INDEX contacts_owner ON contacts (organization_id, owned_by_user_id)')

  // Keys and names are unique among the live definitions of an organization and entity type.
  await knex.raw('CREATE UNIQUE INDEX custom_fields_key_unique ON custom_fields (organization_id, entity_type, key) WHERE deleted_at IS NULL')
  await knex.raw('CREATE UNIQUE INDEX custom_fields_name_unique ON custom_fields (organization_id, entity_type, lower(name)) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX custom_fields_position ON custom_fields (organization_id, entity_type, position)')
}

export async function down(knex: Knex): Promise<void> {
  for (const index of [
    'custom_fields_position', 'custom_fields_name_unique', 'custom_fields_key_unique',
    'contacts_owner', 'contacts_phone_trgm', 'contacts_email_trgm', 'contacts_name_trgm'
  ]) {
    await knex.raw(`DROP INDEX IF EXISTS ${index}`)
  }
  await knex.raw('DROP FUNCTION IF EXISTS search_fold(text)')
}
