import type { Knex } from 'knex'

/**
 * A page of an organization's contacts sorted by a name or the e-mail walks an index in that order
 * and stops at the page (`$skip` + `$limit` entries), instead of sorting the whole organization:
 * its cost does not grow with the organization. created_at and updated_at have theirs already
 * (contacts_organization_id_created_at_index, contacts_sync).
 */
const SORTED = ['first_name', 'last_name', 'email']

export async function up(knex: Knex): Promise<void> {
  for (const column of SORTED) {
    await knex.raw(`CREATE INDEX contacts_order_${column} ON contacts (organization_id, ${column}, id) WHERE deleted_at IS NULL`)
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const column of SORTED) await knex.raw(`DROP INDEX IF EXISTS contacts_order_${column}`)
}
