import type { Knex } from 'knex'
import { e164Of } from '../src/lib/phone-numbers.js'

/**
 * Phone numbers in E.164 (docs/contacts.md#phone-numbers): contacts.phone_e164 holds the number
 * as libphonenumber-js reads it in the contact's region, beside the phone as typed. It replaces
 * phone_normalized (digits kept by a hand-written normaliser) and the indexes of its partial
 * forms; a contact whose number does not parse keeps its phone with phone_e164 null.
 *
 * The column is in the "C" collation (E.164 is ASCII), so one B-tree serves equality (inbound
 * senders, upserts, duplicates) and phone search's order alike.
 */

/** Contacts read and written per statement by the backfill. */
const CHUNK = 1000

const OBSOLETE_INDEXES = ['contacts_phone_trgm', 'contacts_phone_e164', 'contacts_phone_key', 'contacts_search_phone_order']

const INDEXES = [
  'CREATE INDEX contacts_phone_e164 ON contacts (organization_id, phone_e164, id) WHERE deleted_at IS NULL',
  'CREATE INDEX contacts_phone_e164_trgm ON contacts USING gin (organization_id, phone_e164 gin_trgm_ops) WHERE deleted_at IS NULL',
  // The numbers to fix by hand (phone_e164: null with a phone): few, listed by id.
  'CREATE INDEX contacts_phone_unparsed ON contacts (organization_id, id) WHERE deleted_at IS NULL AND phone IS NOT NULL AND phone_e164 IS NULL'
]

/**
 * Fills phone_e164 of every contact with a phone and none yet, deleted ones too: a chunk of
 * contacts at a time in id order, parsed in node, written back by one UPDATE ... FROM (VALUES ...)
 * per chunk. Numbers that do not parse stay null. Answers how many contacts got one.
 */
export async function fillPhoneE164(knex: Knex): Promise<number> {
  let after = 0
  let filled = 0
  for (;;) {
    const rows: { id: number; organization_id: number; phone: string; phone_country_code: string | null; phone_country_iso: string | null }[] = await knex('contacts')
      .select('id', 'organization_id', 'phone', 'phone_country_code', 'phone_country_iso')
      .whereNotNull('phone').whereNull('phone_e164').where('id', '>', after)
      .orderBy('id').limit(CHUNK)
    if (rows.length === 0) return filled
    after = rows[rows.length - 1].id
    const parsed = rows.map((row) => ({ row, e164: e164Of(row) })).filter(({ e164 }) => e164 !== null)
    if (parsed.length === 0) continue
    await knex.raw(
      `UPDATE contacts AS c SET phone_e164 = v.e164 FROM (VALUES ${parsed.map(() => '(?::integer, ?::integer, ?::text)').join(', ')}) AS v(organization_id, id, e164)
        WHERE c.organization_id = v.organization_id AND c.id = v.id`,
      parsed.flatMap(({ row, e164 }) => [row.organization_id, row.id, e164])
    )
    filled += parsed.length
  }
}

// PGlite runs one statement per query, so every statement is its own knex.raw.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE contacts ADD COLUMN phone_e164 text COLLATE "C"')
  await fillPhoneE164(knex)
  for (const index of OBSOLETE_INDEXES) await knex.raw(`DROP INDEX IF EXISTS ${index}`)
  await knex.raw('ALTER TABLE contacts DROP COLUMN phone_normalized')
  for (const definition of INDEXES) await knex.raw(definition)
}

/** Back to phone_normalized, filled with the national digits of phone_e164 (else every digit of the phone). */
export async function down(knex: Knex): Promise<void> {
  for (const index of ['contacts_phone_unparsed', 'contacts_phone_e164_trgm', 'contacts_phone_e164']) await knex.raw(`DROP INDEX IF EXISTS ${index}`)
  await knex.raw('ALTER TABLE contacts ADD COLUMN phone_normalized text')
  await knex.raw(`UPDATE contacts SET phone_normalized = CASE
      WHEN phone_e164 IS NOT NULL AND phone_country_code IS NOT NULL AND starts_with(phone_e164, '+' || regexp_replace(phone_country_code, '[^0-9]', '', 'g'))
        THEN substr(phone_e164, 2 + char_length(regexp_replace(phone_country_code, '[^0-9]', '', 'g')))
      ELSE nullif(regexp_replace(phone, '[^0-9]', '', 'g'), '') END
    WHERE phone IS NOT NULL`)
  await knex.raw('ALTER TABLE contacts DROP COLUMN phone_e164')
  await knex.raw('CREATE INDEX contacts_phone_trgm ON contacts USING gin (organization_id, phone_country_code, phone_normalized gin_trgm_ops) WHERE deleted_at IS NULL')
  await knex.raw(
    "CREATE INDEX contacts_phone_e164 ON contacts (organization_id, (regexp_replace(coalesce(phone_country_code, ''), '[^0-9]', '', 'g') || phone_normalized)) WHERE deleted_at IS NULL AND phone_normalized IS NOT NULL"
  )
  await knex.raw('CREATE INDEX contacts_phone_key ON contacts (organization_id, phone_country_code, phone_normalized) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX contacts_search_phone_order ON contacts (organization_id, phone_country_code, phone_normalized COLLATE "C", id) WHERE deleted_at IS NULL')
}
