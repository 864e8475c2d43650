import type { Knex } from 'knex'

/**
 * The foreign keys that point at a contact are checked, when a contact row is deleted (an
 * organization's deletion cascading, a cleanup), with a lookup on (organization_id, contact_id)
 * of each referencing table. That lookup cannot use an index limited to live rows, so each
 * deleted contact scanned every deal and activity of the table. These indexes cover all rows;
 * they replace the live-row ones, which served the lists no better.
 */
const REFERENCING = [
  { table: 'deals', live: 'deals_contact' },
  { table: 'activities', live: 'activities_contact_id_index' },
  { table: 'conversations', live: 'conversations_contact' },
  { table: 'reservations', live: 'reservations_contact_index' },
  { table: 'webchat_sessions', live: undefined }
]

export async function up(knex: Knex): Promise<void> {
  for (const { table, live } of REFERENCING) {
    if (live) await knex.raw(`DROP INDEX IF EXISTS ${live}`)
    await knex.raw(`CREATE INDEX ${table}_contact_reference ON ${table} (organization_id, contact_id)`)
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const { table, live } of REFERENCING) {
    await knex.raw(`DROP INDEX IF EXISTS ${table}_contact_reference`)
    if (live) await knex.raw(`CREATE INDEX ${live} ON ${table} (organization_id, contact_id) WHERE deleted_at IS NULL`)
  }
}
