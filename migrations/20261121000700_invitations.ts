import type { Knex } from 'knex'
import { tenantTable } from './lib/tenant-table.js'

// PGlite accepts one statement per query, so every raw statement stands alone.
export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'organizations_users_invites', (t) => {
    t.text('email').notNullable()
    t.text('role').notNullable()
    t.text('status').notNullable().defaultTo('pending')
    t.text('token').notNullable()
    t.timestamp('expires_at', { useTz: true }).notNullable()
    t.integer('created_by_user_id').references('id').inTable('users')
    t.integer('accepted_by_user_id').references('id').inTable('users')
    t.timestamp('accepted_at', { useTz: true })
    t.check(`role IN ('owner', 'admin', 'member')`, [], 'organizations_users_invites_role_check')
    t.check(`status IN ('pending', 'accepted')`, [], 'organizations_users_invites_status_check')
    t.check('email = lower(email)', [], 'organizations_users_invites_email_lower_check')
    // The token is looked up before the organization is known (an unauthenticated lookup);
    // it carries 256 random bits, so it is globally unique by construction, like an API key hash.
    t.unique(['token'])
    t.index(['organization_id', 'email'])
    t.index(['organization_id', 'status', 'expires_at'])
  })

  // The transactional outbox: mail written in the transaction of the change that causes it and
  // drained by the background worker. It is a queue of the platform, drained across every
  // organization, so it is a global table (like users); organization_id only attributes a message.
  await knex.schema.createTable('mail_outbox', (t) => {
    t.increments('id')
    t.integer('organization_id').references('id').inTable('organizations').onDelete('SET NULL')
    t.text('kind').notNullable()
    t.text('recipient').notNullable()
    t.text('subject').notNullable()
    t.text('text_body').notNullable()
    t.text('html_body')
    t.text('status').notNullable().defaultTo('pending')
    t.integer('attempts').notNullable().defaultTo(0)
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.text('last_error')
    t.text('message_id')
    t.timestamp('sent_at', { useTz: true })
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.check(`status IN ('pending', 'sending', 'sent', 'logged', 'failed')`, [], 'mail_outbox_status_check')
  })
  await knex.raw(
    `CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at, id) WHERE status IN ('pending', 'sending')`
  )
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('mail_outbox')
  await knex.schema.dropTableIfExists('organizations_users_invites')
}
