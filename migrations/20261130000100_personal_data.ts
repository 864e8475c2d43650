import type { Knex } from 'knex'
import { MILLISECONDS, tenantTable } from './lib/tenant-table.js'

/**
 * Personal data on request (docs/privacy.md):
 * - organizations.deleted_retention_days: how long soft-deleted records are kept before the purge
 *   removes them for good (0 keeps them forever);
 * - contacts.merged_into_id: the contact a merge folded this one into, so that the person's
 *   duplicates are exported and erased with them;
 * - personal_data_erasures: the audit record an erasure leaves (who erased which contact when,
 *   and how many records went), with no personal data;
 * - idempotency_keys.answer_erased_at: a stored answer emptied by an erasure is not replayed;
 * - indexes: the deleted rows of every soft-deleted tenant table by organization and time (what
 *   the purge looks for), outbox jobs by organization (what an erasure scrubs), and the
 *   references the purge and erasures follow that had no index covering deleted rows.
 */

const REFERENCES: [table: string, column: string][] = [
  ['activities', 'deal_id'],
  ['activities', 'company_id'],
  ['deals', 'company_id'],
  ['reservations', 'company_id'],
  ['reservations', 'deal_id'],
  ['deal_products', 'product_id'],
  ['product_media', 'product_id'],
  ['conversation_messages', 'conversation_id'],
  ['conversation_messages', 'reply_to_message_id'],
  ['webchat_sessions', 'conversation_id']
]

const referenceIndex = (table: string, column: string) => `${table}_${column.replace(/_id$/, '')}_any`

/** The tenant tables with soft delete, from the catalogue: each gets an index of its deleted rows. */
async function softDeletedTables(knex: Knex): Promise<string[]> {
  const { rows } = await knex.raw(
    `SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.column_name = 'deleted_at'
        AND EXISTS (SELECT 1 FROM information_schema.columns o WHERE o.table_schema = c.table_schema AND o.table_name = c.table_name AND o.column_name = 'organization_id')
      ORDER BY c.table_name`
  )
  return rows.map((row: { table_name: string }) => row.table_name)
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organizations', (t) => {
    t.integer('deleted_retention_days').notNullable().defaultTo(30)
  })
  await knex.raw('ALTER TABLE organizations ADD CONSTRAINT organizations_deleted_retention_days_range CHECK (deleted_retention_days BETWEEN 0 AND 3650)')
  await knex.schema.alterTable('contacts', (t) => {
    t.integer('merged_into_id')
  })
  await knex.raw('CREATE INDEX contacts_merged_into ON contacts (organization_id, merged_into_id) WHERE merged_into_id IS NOT NULL')
  await tenantTable(knex, 'personal_data_erasures', (t) => {
    t.integer('contact_id').notNullable()
    t.integer('erased_by_user_id').references('id').inTable('users').onDelete('SET NULL')
    t.integer('api_key_id')
    t.timestamp('erased_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.jsonb('removed').notNullable()
    t.jsonb('unlinked').notNullable()
    t.jsonb('cancelled').notNullable()
    t.unique(['organization_id', 'contact_id'])
  }, { softDelete: false })
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.timestamp('answer_erased_at', MILLISECONDS)
  })
  await knex.raw('CREATE INDEX idempotency_keys_organization ON idempotency_keys (organization_id) WHERE organization_id IS NOT NULL')
  await knex.raw('CREATE INDEX outbox_jobs_organization ON outbox_jobs (organization_id, topic, id) WHERE organization_id IS NOT NULL')
  for (const table of await softDeletedTables(knex)) {
    await knex.raw(`CREATE INDEX ${table}_deleted_rows ON ${table} (organization_id, deleted_at) WHERE deleted_at IS NOT NULL`)
  }
  for (const [table, column] of REFERENCES) {
    await knex.raw(`CREATE INDEX ${referenceIndex(table, column)} ON ${table} (organization_id, ${column}) WHERE ${column} IS NOT NULL`)
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, column] of REFERENCES) await knex.raw(`DROP INDEX IF EXISTS ${referenceIndex(table, column)}`)
  for (const table of await softDeletedTables(knex)) await knex.raw(`DROP INDEX IF EXISTS ${table}_deleted_rows`)
  await knex.raw('DROP INDEX IF EXISTS outbox_jobs_organization')
  await knex.raw('DROP INDEX IF EXISTS idempotency_keys_organization')
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropColumn('answer_erased_at')
  })
  await knex.schema.dropTable('personal_data_erasures')
  await knex.raw('DROP INDEX IF EXISTS contacts_merged_into')
  await knex.schema.alterTable('contacts', (t) => {
    t.dropColumn('merged_into_id')
  })
  await knex.schema.alterTable('organizations', (t) => {
    t.dropColumn('deleted_retention_days')
  })
}
