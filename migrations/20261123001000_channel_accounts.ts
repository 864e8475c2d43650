import type { Knex } from 'knex'
import { MILLISECONDS, tenantReference, tenantTable } from './lib/tenant-table.js'

// Channel integrations (issue 15): the accounts an organization connects (a WhatsApp number, a
// Facebook page, an Instagram account, a Twilio number, a site widget), the identities of the
// people who write from them, statuses that arrive before their message's provider id is known,
// and web-chat visitor sessions. PGlite accepts one statement per query: every raw statement stands alone.
const ACCOUNT_CHANNELS = "('whatsapp', 'instagram', 'messenger', 'sms', 'webchat')"

export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'channel_accounts', (t) => {
    t.text('channel').notNullable()
    t.text('name').notNullable()
    t.boolean('is_active').notNullable().defaultTo(true)
    t.jsonb('config').notNullable().defaultTo(knex.raw("'{}'::jsonb"))
    // The provider's id of the account (phone_number_id, page_id, instagram_account_id, from_number): one live account each.
    t.text('provider_id')
    // The unguessable part of webhook_url: an inbound request finds its account by it, never by a payload field.
    t.text('webhook_key').notNullable()
    t.text('verify_token').notNullable()
    t.text('widget_token')
    // AES-256-GCM (src/services/inbox/channels/secrets.ts): never plain text at rest.
    t.text('credentials')
    t.check(`channel IN ${ACCOUNT_CHANNELS}`, [], 'channel_accounts_channel_check')
    t.check(`(channel = 'webchat') = (widget_token IS NOT NULL)`, [], 'channel_accounts_widget_token_check')
  })
  await knex.raw('CREATE UNIQUE INDEX channel_accounts_webhook_key ON channel_accounts (webhook_key)')
  await knex.raw('CREATE UNIQUE INDEX channel_accounts_widget_token ON channel_accounts (widget_token) WHERE widget_token IS NOT NULL')
  await knex.raw(
    'CREATE UNIQUE INDEX channel_accounts_provider_unique ON channel_accounts (channel, provider_id) WHERE deleted_at IS NULL AND provider_id IS NOT NULL'
  )
  await knex.raw('CREATE INDEX channel_accounts_list ON channel_accounts (organization_id, id) WHERE deleted_at IS NULL')

  await knex.schema.alterTable('conversations', (t) => tenantReference(t, 'channel_account_id', 'channel_accounts'))
  await knex.schema.alterTable('conversation_messages', (t) => tenantReference(t, 'channel_account_id', 'channel_accounts'))
  // The thread of a contact on one account (inbound routing) and the 24-hour window.
  await knex.raw(
    'CREATE INDEX conversations_account_contact ON conversations (organization_id, channel_account_id, contact_id) WHERE deleted_at IS NULL AND channel_account_id IS NOT NULL'
  )

  // What a provider tells about a message beyond its text: media ids, a location, an interactive reply.
  await knex.schema.alterTable('conversation_messages', (t) => {
    t.jsonb('metadata').notNullable().defaultTo(knex.raw("'{}'::jsonb"))
  })

  // Page-scoped Messenger ids, and WhatsApp's business-scoped user id (BSUID) of a sender with a username.
  await knex.schema.alterTable('contacts', (t) => {
    t.text('channel_messenger_user_id')
    t.text('channel_whatsapp_user_id')
  })
  for (const column of ['channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_instagram_user_id', 'channel_messenger_user_id']) {
    await knex.raw(`CREATE INDEX contacts_${column} ON contacts (organization_id, ${column}) WHERE deleted_at IS NULL AND ${column} IS NOT NULL`)
  }

  // An inbound SMS or WhatsApp sender is matched by phone in E.164 (country code and number digits).
  await knex.raw(
    "CREATE INDEX contacts_phone_e164 ON contacts (organization_id, (regexp_replace(coalesce(phone_country_code, ''), '[^0-9]', '', 'g') || phone_normalized)) WHERE deleted_at IS NULL AND phone_normalized IS NOT NULL"
  )

  // A status of a provider's message, kept whether or not the message is known yet: one that
  // arrives before the send call has returned the provider's id is applied once the id is stored.
  await tenantTable(knex, 'channel_message_statuses', (t) => {
    t.integer('channel_account_id').notNullable()
    t.text('provider_message_id').notNullable()
    t.text('status').notNullable()
    t.jsonb('error')
    t.timestamp('occurred_at', MILLISECONDS).notNullable()
    t.check(`status IN ('sent', 'delivered', 'read', 'failed')`, [], 'channel_message_statuses_status_check')
    tenantReference(t, 'channel_account_id', 'channel_accounts', 'CASCADE')
  }, { softDelete: false })
  await knex.raw(
    'CREATE UNIQUE INDEX channel_message_statuses_unique ON channel_message_statuses (organization_id, channel_account_id, provider_message_id, status)'
  )

  // A web-chat visitor: the conversation their token opens, and nothing else.
  await tenantTable(knex, 'webchat_sessions', (t) => {
    t.integer('channel_account_id').notNullable()
    t.integer('contact_id').notNullable()
    t.integer('conversation_id').notNullable()
    t.text('token_hash').notNullable()
    tenantReference(t, 'channel_account_id', 'channel_accounts', 'CASCADE')
    tenantReference(t, 'contact_id', 'contacts', 'CASCADE')
    tenantReference(t, 'conversation_id', 'conversations', 'CASCADE')
  }, { softDelete: false })
  await knex.raw('CREATE UNIQUE INDEX webchat_sessions_token ON webchat_sessions (token_hash)')
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webchat_sessions')
  await knex.schema.dropTableIfExists('channel_message_statuses')
  for (const column of ['channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_instagram_user_id', 'channel_messenger_user_id']) {
    await knex.raw(`DROP INDEX IF EXISTS contacts_${column}`)
  }
  await knex.raw('DROP INDEX IF EXISTS contacts_phone_e164')
  await knex.schema.alterTable('conversation_messages', (t) => t.dropColumn('metadata'))
  await knex.schema.alterTable('contacts', (t) => {
    t.dropColumn('channel_messenger_user_id')
    t.dropColumn('channel_whatsapp_user_id')
  })
  await knex.raw('DROP INDEX IF EXISTS conversations_account_contact')
  await knex.schema.alterTable('conversation_messages', (t) => t.dropForeign(['organization_id', 'channel_account_id']))
  await knex.schema.alterTable('conversations', (t) => t.dropForeign(['organization_id', 'channel_account_id']))
  await knex.schema.dropTableIfExists('channel_accounts')
}
