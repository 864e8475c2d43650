import type { Knex } from 'knex'

/**
 * Password reset links: single-use, expiring tokens stored as SHA-256 hashes, like
 * email_verifications. A global table: a reset belongs to an account, not to an organization.
 * The address the link was mailed to is kept, so a link sent before an e-mail change does not
 * open the account under its new address.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('password_resets', (t) => {
    t.increments('id')
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE')
    t.text('email').notNullable()
    t.text('token_hash').notNullable().unique()
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable()
    t.timestamp('used_at', { useTz: true, precision: 3 })
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now())
    t.index(['user_id'])
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('password_resets')
}
