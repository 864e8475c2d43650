import type { Knex } from 'knex'
import { MILLISECONDS, tenantReference, tenantTable } from './lib/tenant-table.js'

// Issue 17: stored answers of requests sent with an Idempotency-Key, and outbound webhooks
// (subscriptions, and one delivery row per event and subscription; the outbox job carries it).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.bigIncrements('id')
    // Whose key it is: 'organization:<id>', 'user:<id>' (a person's token naming no organization) or 'public'.
    t.text('scope').notNullable()
    t.integer('organization_id').references('id').inTable('organizations').onDelete('CASCADE')
    t.text('key').notNullable()
    t.text('method').notNullable()
    t.text('path').notNullable()
    t.text('body_hash').notNullable()
    t.text('status').notNullable().defaultTo('running')
    t.integer('status_code')
    t.jsonb('response_body')
    t.timestamp('locked_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('created_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('expires_at', MILLISECONDS).notNullable()
    t.unique(['scope', 'key'])
    t.index(['expires_at'])
    t.check(`status IN ('running', 'done')`, [], 'idempotency_keys_status_check')
  })

  await tenantTable(knex, 'webhook_subscriptions', (t) => {
    t.text('url').notNullable()
    t.jsonb('events').notNullable()
    t.boolean('is_active').notNullable().defaultTo(true)
    t.text('secret').notNullable()
    t.text('description')
    // Set by the first failed delivery after a success, cleared by the next success.
    t.timestamp('failing_since', MILLISECONDS)
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`jsonb_typeof(events) = 'array'`, [], 'webhook_subscriptions_events_check')
    t.index(['organization_id', 'is_active'])
  })

  await tenantTable(knex, 'webhook_deliveries', (t) => {
    t.integer('subscription_id').notNullable()
    t.text('event_id').notNullable()
    t.text('type').notNullable()
    t.jsonb('payload').notNullable()
    t.text('status').notNullable().defaultTo('pending')
    t.integer('attempts').notNullable().defaultTo(0)
    t.integer('last_status_code')
    t.text('last_error')
    t.timestamp('next_attempt_at', MILLISECONDS)
    t.timestamp('delivered_at', MILLISECONDS)
    tenantReference(t, 'subscription_id', 'webhook_subscriptions', 'CASCADE')
    t.check(`status IN ('pending', 'delivered', 'failed')`, [], 'webhook_deliveries_status_check')
    t.index(['organization_id', 'subscription_id', 'id'])
    t.index(['organization_id', 'event_id'])
  }, { softDelete: false })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_deliveries')
  await knex.schema.dropTableIfExists('webhook_subscriptions')
  await knex.schema.dropTableIfExists('idempotency_keys')
}
