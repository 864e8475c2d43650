import type { Knex } from 'knex'
import { distributeLookupTable } from './lib/citus.js'

/**
 * public_tokens: the organization of each web-chat visitor token and reservation manage token
 * (src/lib/public-tokens.ts), filled from the existing sessions and reservations. On Citus it is
 * distributed by the token's hash, so finding a token's organization is a single-shard statement.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('public_tokens', (t) => {
    t.text('token_hash').primary()
    t.integer('organization_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE')
  })
  await knex.raw(`
    INSERT INTO public_tokens (token_hash, organization_id)
    SELECT token_hash, organization_id FROM webchat_sessions
    UNION ALL
    SELECT manage_token_hash, organization_id FROM reservations WHERE manage_token_hash IS NOT NULL
    ON CONFLICT (token_hash) DO NOTHING`)
  await distributeLookupTable(knex, 'public_tokens', 'token_hash')
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('public_tokens')
}
