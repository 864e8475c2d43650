import type { Knex } from 'knex'
import { MILLISECONDS, tenantReference, tenantTable } from './lib/tenant-table.js'

// The omnichannel inbox (issue 13): conversations, their messages on every channel in one
// table, predefined replies and attached files. channel_account_id has no foreign key yet: the
// channel accounts come with the companion issue "Channel integrations".
// PGlite accepts one statement per query, so every raw statement stands alone.
const CHANNEL_LIST = ['whatsapp', 'instagram', 'messenger', 'webchat', 'sms', 'playground']
const CHANNELS = `(${CHANNEL_LIST.map((channel) => `'${channel}'`).join(', ')})`
const CHANNEL_ARRAY = `'{${CHANNEL_LIST.join(',')}}'::text[]`
const DEFAULT_AI_CONTEXT = '{"enabled": false, "paused_until": null, "summary": null, "variables": {}}'

export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'conversations', (t) => {
    t.text('channel').notNullable()
    t.integer('contact_id').notNullable()
    t.integer('channel_account_id')
    t.text('status').notNullable().defaultTo('open')
    t.timestamp('snoozed_until', MILLISECONDS)
    t.specificType('assignee_user_ids', 'integer[]').notNullable().defaultTo(knex.raw("'{}'::integer[]"))
    t.integer('pipeline_id')
    t.integer('pipeline_stage_id')
    t.integer('unread_count').notNullable().defaultTo(0)
    t.boolean('is_blocked').notNullable().defaultTo(false)
    t.jsonb('ai_context').notNullable().defaultTo(knex.raw(`'${DEFAULT_AI_CONTEXT}'::jsonb`))
    t.timestamp('last_message_at', MILLISECONDS)
    t.text('last_message_preview')
    t.timestamp('last_inbound_at', MILLISECONDS)
    t.check(`channel IN ${CHANNELS}`, [], 'conversations_channel_check')
    t.check(`status IN ('open', 'pending', 'snoozed', 'resolved')`, [], 'conversations_status_check')
    // A snoozed thread knows when it wakes up; any other status has no wake-up time.
    t.check(`(status = 'snoozed') = (snoozed_until IS NOT NULL)`, [], 'conversations_snoozed_until_check')
    t.check('unread_count >= 0', [], 'conversations_unread_count_check')
    t.check('(pipeline_id IS NULL) = (pipeline_stage_id IS NULL)', [], 'conversations_pipeline_check')
    tenantReference(t, 'contact_id', 'contacts')
    tenantReference(t, 'pipeline_id', 'pipelines')
    // The stage is referenced with its pipeline, so a stage of another pipeline is impossible.
    t.foreign(['organization_id', 'pipeline_id', 'pipeline_stage_id'])
      .references(['organization_id', 'pipeline_id', 'id'])
      .inTable('pipeline_stages')
  })
  // The inbox list: one status, newest activity first, ties by id.
  await knex.raw('CREATE INDEX conversations_inbox ON conversations (organization_id, status, last_message_at, id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX conversations_recent ON conversations (organization_id, last_message_at, id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX conversations_contact ON conversations (organization_id, contact_id) WHERE deleted_at IS NULL')
  await knex.raw('CREATE INDEX conversations_stage ON conversations (organization_id, pipeline_stage_id) WHERE deleted_at IS NULL')
  // "Assigned to me": array containment, served by GIN (btree_gin gives organization_id its GIN operator class).
  await knex.raw('CREATE INDEX conversations_assignees ON conversations USING gin (organization_id, assignee_user_ids) WHERE deleted_at IS NULL')

  await tenantTable(knex, 'conversation_predefined_messages', (t) => {
    t.text('title').notNullable()
    t.text('shortcut')
    t.text('content').notNullable()
    t.specificType('channels', 'text[]').notNullable()
      .defaultTo(knex.raw(CHANNEL_ARRAY))
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`shortcut IS NULL OR shortcut ~ '^[a-z0-9_-]{1,32}$'`, [], 'conversation_predefined_messages_shortcut_check')
    t.check(`channels <@ ${CHANNEL_ARRAY}`, [], 'conversation_predefined_messages_channels_check')
  })
  await knex.raw(
    'CREATE UNIQUE INDEX conversation_predefined_messages_shortcut_unique ON conversation_predefined_messages (organization_id, shortcut) WHERE deleted_at IS NULL AND shortcut IS NOT NULL'
  )
  await knex.raw(
    'CREATE INDEX conversation_predefined_messages_title_trgm ON conversation_predefined_messages USING gin (organization_id, lower(title) gin_trgm_ops) WHERE deleted_at IS NULL'
  )

  await tenantTable(knex, 'conversation_files', (t) => {
    t.integer('conversation_id').notNullable()
    t.text('storage_key').notNullable()
    t.text('file_name').notNullable()
    t.text('file_type').notNullable()
    t.bigInteger('file_size').notNullable()
    t.text('url').notNullable()
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check('file_size >= 0', [], 'conversation_files_file_size_check')
    tenantReference(t, 'conversation_id', 'conversations')
    t.unique(['organization_id', 'storage_key'])
    t.index(['organization_id', 'conversation_id'])
  })

  await tenantTable(knex, 'conversation_messages', (t) => {
    t.integer('conversation_id').notNullable()
    t.text('channel').notNullable()
    t.integer('channel_account_id')
    t.text('direction').notNullable()
    t.text('sender_type').notNullable()
    t.integer('sender_user_id').references('id').inTable('users')
    t.text('content').notNullable().defaultTo('')
    t.text('content_type').notNullable().defaultTo('text')
    t.specificType('file_ids', 'integer[]').notNullable().defaultTo(knex.raw("'{}'::integer[]"))
    t.jsonb('template')
    t.integer('reply_to_message_id')
    t.text('provider_message_id')
    t.text('status').notNullable()
    t.jsonb('error')
    t.timestamp('sent_at', MILLISECONDS)
    t.timestamp('delivered_at', MILLISECONDS)
    t.timestamp('read_at', MILLISECONDS)
    t.check(`channel IN ${CHANNELS}`, [], 'conversation_messages_channel_check')
    t.check(`direction IN ('inbound', 'outbound', 'note')`, [], 'conversation_messages_direction_check')
    t.check(`sender_type IN ('contact', 'user', 'assistant', 'system')`, [], 'conversation_messages_sender_type_check')
    t.check(`content_type IN ('text', 'image', 'audio', 'video', 'file', 'location', 'template')`, [], 'conversation_messages_content_type_check')
    t.check(`status IN ('queued', 'sent', 'delivered', 'read', 'failed', 'received')`, [], 'conversation_messages_status_check')
    t.check(`(content_type = 'template') = (template IS NOT NULL)`, [], 'conversation_messages_template_check')
    tenantReference(t, 'conversation_id', 'conversations')
    tenantReference(t, 'reply_to_message_id', 'conversation_messages')
  })
  // A conversation's messages in order, for keyset paging in both directions.
  await knex.raw(
    'CREATE INDEX conversation_messages_thread ON conversation_messages (organization_id, conversation_id, created_at, id) WHERE deleted_at IS NULL'
  )
  // A provider's message is stored once per channel account (inbound webhooks are retried).
  await knex.raw(
    'CREATE UNIQUE INDEX conversation_messages_provider_unique ON conversation_messages (organization_id, channel_account_id, provider_message_id) WHERE provider_message_id IS NOT NULL'
  )
  // The inbox search over message text.
  await knex.raw(
    'CREATE INDEX conversation_messages_content_trgm ON conversation_messages USING gin (organization_id, lower(content) gin_trgm_ops) WHERE deleted_at IS NULL'
  )
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('conversation_messages')
  await knex.schema.dropTableIfExists('conversation_files')
  await knex.schema.dropTableIfExists('conversation_predefined_messages')
  await knex.schema.dropTableIfExists('conversations')
}
