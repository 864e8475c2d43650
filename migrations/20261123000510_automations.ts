import type { Knex } from 'knex'
import { tenantReference, tenantTable } from './lib/tenant-table.js'

// Inbox automations (issue 13): an ordered list of actions run on a conversation, and the
// record of each run. An execution is a fact: it is never edited or deleted.
export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'automations', (t) => {
    t.text('name').notNullable()
    t.boolean('is_active').notNullable().defaultTo(true)
    t.jsonb('actions').notNullable()
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`jsonb_typeof(actions) = 'array'`, [], 'automations_actions_check')
  })

  await tenantTable(knex, 'automation_executions', (t) => {
    t.integer('automation_id').notNullable()
    t.integer('conversation_id').notNullable()
    t.text('status').notNullable()
    t.jsonb('results').notNullable()
    t.jsonb('context').notNullable().defaultTo('{}')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`status IN ('succeeded', 'failed')`, [], 'automation_executions_status_check')
    tenantReference(t, 'automation_id', 'automations')
    tenantReference(t, 'conversation_id', 'conversations')
    t.index(['organization_id', 'automation_id', 'created_at'])
    t.index(['organization_id', 'conversation_id', 'created_at'])
  }, { softDelete: false })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('automation_executions')
  await knex.schema.dropTableIfExists('automations')
}
