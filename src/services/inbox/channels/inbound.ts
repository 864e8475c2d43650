import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import type { PendingEvent } from '../../../hooks/deferred-events.js'
import { messagePath } from '../conversation-messages/conversation-messages.shared.js'
import type { ConversationMessageService, ReceivedMessage } from '../conversation-messages/conversation-messages.class.js'
import { contactOfSender } from './contacts.js'
import type { ContactChange, Who } from './contacts.js'
import { providerUrls } from './accounts.js'
import { ADAPTERS } from './providers/index.js'
import type { ChannelAccountRecord, InboundEvent, ProviderError, ProviderStatus, Sender } from './providers/types.js'

/**
 * A message's delivery status only moves forward: queued → sent → delivered → read; 'failed'
 * ranks above 'sent' (a send that the provider could not deliver) and below 'delivered' (a late
 * failure report after a delivery changes nothing).
 */
// A position in an array rather than a simple CASE: Citus sends `CASE $1 WHEN …` over a parameter
// to the workers as a comparison of text with boolean.
const rank = (column: string) => `coalesce(array_position('{queued,sent,failed,delivered,read}'::text[], ${column}), 6)`

const FALLBACK_NAMES: Record<string, string> = { whatsapp: 'WhatsApp contact', messenger: 'Messenger user', instagram: 'Instagram user', sms: 'SMS contact', webchat: 'Visitor' }

// The registered service (the one whose events are published), typed as our class.
const serviceOf = (app: Application, channel: string) =>
  app.service(messagePath(channel as ConversationMessageService['channel']) as 'conversation-messages-whatsapp') as ConversationMessageService & { emit: (event: string, data: unknown) => void }

/**
 * The conversation on this account that takes a contact's new message: their open or pending
 * one, else their latest snoozed or resolved one (reopened when the message is stored), else a
 * new one. Answers undefined for a blocked conversation: it takes no messages.
 */
export async function conversationFor(app: Application, trx: Knex.Transaction, account: ChannelAccountRecord, contactId: number, pendingEvents: PendingEvent[]) {
  const existing = await trx('conversations')
    .where({ organization_id: account.organization_id, channel_account_id: account.id, contact_id: contactId })
    .whereNull('deleted_at')
    .orderByRaw("(status IN ('open', 'pending')) DESC")
    .orderByRaw('last_message_at DESC NULLS LAST')
    .orderBy('id', 'desc')
    .first()
  if (existing) return existing.is_blocked ? undefined : existing
  const [created] = await trx('conversations')
    .insert({ organization_id: account.organization_id, channel: account.channel, contact_id: contactId, channel_account_id: account.id })
    .returning('*')
  pendingEvents.push({ service: app.service('conversations'), event: 'created', data: created, stored: true })
  return created
}

/** The contacts events of a sender's contact created or completed in a transaction, emitted after its commit. */
export const contactEvents = (app: Application, pendingEvents: PendingEvent[]): ContactChange => (event, data) =>
  pendingEvents.push({ service: app.service('contacts') as unknown as PendingEvent['service'], event, data, stored: true })

/** A contact's message through a channel, stored once, in its conversation; events after the commit. */
export async function receiveMessage(app: Application, account: ChannelAccountRecord, who: Who, message: ReceivedMessage) {
  return inTransaction(app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
    const contact = await contactOfSender(trx, account.organization_id, who, FALLBACK_NAMES[account.channel], contactEvents(app, pendingEvents))
    const conversation = await conversationFor(app, trx, account, contact.id, pendingEvents)
    if (!conversation) {
      app.get('logger').info({ channel_account_id: account.id, contact_id: contact.id }, 'channels: message of a blocked conversation ignored')
      return undefined
    }
    const stored = await serviceOf(app, account.channel).receive(trx, conversation, message, pendingEvents)
    // A replay stores nothing: undo a contact or conversation this attempt may have made meanwhile.
    if (!stored) throw new Replayed()
    return stored
  }).catch((error) => {
    if (error instanceof Replayed) return undefined
    throw error
  })
}

class Replayed extends Error {}

/** Serializes the writers of one provider message's status (the webhook, the send that learns its id). */
const lockStatusOf = (trx: Knex.Transaction, account: ChannelAccountRecord, providerMessageId: string) =>
  trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [account.organization_id, `status:${account.id}:${providerMessageId}`])

/** The changes a status makes to a message that ranks below it. */
function statusChanges(trx: Knex.Transaction, status: ProviderStatus, occurredAt: Date, error?: ProviderError) {
  const changes: Record<string, unknown> = { status, updated_at: trx.fn.now() }
  if (status === 'failed') {
    changes.error = JSON.stringify(error ?? { code: 'failed', message: 'the provider could not deliver the message' })
  } else {
    changes.sent_at = trx.raw('coalesce(sent_at, ?)', [occurredAt])
  }
  if (status === 'delivered' || status === 'read') changes.delivered_at = trx.raw('coalesce(delivered_at, ?)', [occurredAt])
  if (status === 'read') changes.read_at = trx.raw('coalesce(read_at, ?)', [occurredAt])
  return changes
}

/** Moves one outbound message forward, when it ranks below the status. */
async function moveMessage(trx: Knex.Transaction, account: ChannelAccountRecord, providerMessageId: string, status: ProviderStatus, occurredAt: Date, error?: ProviderError) {
  return trx('conversation_messages')
    .where({ organization_id: account.organization_id, channel_account_id: account.id, provider_message_id: providerMessageId, direction: 'outbound' })
    .whereRaw(`${rank('status')} < ${rank('?::text')}`, [status])
    .update(statusChanges(trx, status, occurredAt, error))
    .returning('*')
}

/**
 * A provider's status of one of our messages. It is kept (once per message and status) whether
 * or not the message is known yet: one that arrives before the send call has returned the
 * provider's id is applied by applyKeptStatuses once the id is stored.
 */
export async function receiveStatus(app: Application, account: ChannelAccountRecord, event: Extract<InboundEvent, { type: 'status' }>) {
  await inTransaction(app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
    await lockStatusOf(trx, account, event.providerMessageId)
    await trx('channel_message_statuses')
      .insert({
        organization_id: account.organization_id, channel_account_id: account.id, provider_message_id: event.providerMessageId,
        status: event.status, error: event.error ? JSON.stringify(event.error) : null, occurred_at: event.occurredAt
      })
      .onConflict(['organization_id', 'channel_account_id', 'provider_message_id', 'status'])
      .ignore()
    const moved = await moveMessage(trx, account, event.providerMessageId, event.status, event.occurredAt, event.error)
    for (const row of moved) pendingEvents.push({ service: serviceOf(app, account.channel), event: 'patched', data: row, stored: true })
  })
}

/**
 * Records the provider's id of a message just sent ('sent') and applies the statuses that
 * arrived before it, in their rank order, under the same lock as receiveStatus. Answers the row.
 */
export async function recordSent(app: Application, account: ChannelAccountRecord, messageId: number, providerMessageId: string) {
  return inTransaction(app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
    await lockStatusOf(trx, account, providerMessageId)
    let [row] = await trx('conversation_messages')
      .where({ organization_id: account.organization_id, id: messageId, status: 'queued' })
      .update({ provider_message_id: providerMessageId, status: 'sent', sent_at: trx.fn.now(), error: null, updated_at: trx.fn.now() })
      .returning('*')
    if (!row) return undefined
    const kept = await trx('channel_message_statuses')
      .where({ organization_id: account.organization_id, channel_account_id: account.id, provider_message_id: providerMessageId })
      .orderByRaw(rank('status'))
    for (const status of kept) {
      const [moved] = await moveMessage(trx, account, providerMessageId, status.status, status.occurred_at, status.error ?? undefined)
      row = moved ?? row
    }
    pendingEvents.push({ service: serviceOf(app, account.channel), event: 'patched', data: row, stored: true })
    return row
  })
}

/** A message that will never be sent: 'failed' with the error, while it is still queued. */
export async function recordFailed(app: Application, account: { organization_id: number; channel: string }, messageId: number, error: ProviderError) {
  const [row] = await app.get('knex')('conversation_messages')
    .where({ organization_id: account.organization_id, id: messageId, status: 'queued' })
    .update({ status: 'failed', error: JSON.stringify(error), updated_at: app.get('knex').fn.now() })
    .returning('*')
  if (row) {
    const [failed] = await serviceOf(app, account.channel).rendered([row])
    serviceOf(app, account.channel).emit('patched', failed)
  }
  return row
}

/** Messenger's delivery and read watermarks: every outbound message to this person up to that time moves. */
export async function receiveWatermark(app: Application, account: ChannelAccountRecord, event: Extract<InboundEvent, { type: 'watermark' }>) {
  const column = event.sender.messengerUserId ? 'channel_messenger_user_id' : 'channel_instagram_user_id'
  const id = event.sender.messengerUserId ?? event.sender.instagramUserId
  await inTransaction(app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
    const contacts = trx('contacts').select('id').where({ organization_id: account.organization_id, [column]: id })
    const moved = await trx('conversation_messages')
      .where({ organization_id: account.organization_id, channel_account_id: account.id, direction: 'outbound' })
      .whereNotNull('provider_message_id')
      .whereIn('conversation_id', trx('conversations').select('id').where({ organization_id: account.organization_id, channel_account_id: account.id }).whereIn('contact_id', contacts))
      .whereRaw('coalesce(sent_at, created_at) <= ?', [event.watermark])
      .whereRaw(`${rank('status')} < ${rank('?::text')}`, [event.status])
      .update(statusChanges(trx, event.status, event.watermark))
      .returning('*')
    for (const row of moved) pendingEvents.push({ service: serviceOf(app, account.channel), event: 'patched', data: row, stored: true })
  })
}

const IDENTITY_OF: [keyof Sender, string][] = [['messengerUserId', 'channel_messenger_user_id'], ['instagramUserId', 'channel_instagram_user_id']]

/**
 * A sender whose webhook carries no name, and who is not a contact yet, is named from the
 * provider's profile (asked outside any transaction; no name when the provider does not answer).
 */
async function withProfileName(app: Application, account: ChannelAccountRecord, sender: Sender): Promise<Sender> {
  const adapter = ADAPTERS[account.channel]
  const identity = IDENTITY_OF.find(([key]) => sender[key])
  if (sender.name || !adapter?.profileName || !identity) return sender
  const known = await app.get('knex')('contacts').first('id')
    .where({ organization_id: account.organization_id, [identity[1]]: sender[identity[0]] }).whereNull('deleted_at')
  if (known) return sender
  return { ...sender, name: await adapter.profileName(sender, account, providerUrls(app)) }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * What a provider sent, as Postgres can store it, the same for every channel: NUL characters
 * removed (neither text nor jsonb takes one) and lone UTF-16 surrogates, which no UTF-8 can
 * carry, replaced with U+FFFD; in every string, keys included. A signed message whose text the
 * database refused would otherwise fail on every retry.
 */
function storable<T>(value: T): T {
  if (typeof value === 'string') return value.replace(/\u0000/g, '').replace(LONE_SURROGATE, '\uFFFD') as T
  if (Array.isArray(value)) return value.map(storable) as T
  if (!value || typeof value !== 'object' || value instanceof Date) return value
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storable(key), storable(item)])) as T
}

/** Stores what one verified webhook request carried, event by event (each one idempotent). */
export async function receiveEvents(app: Application, account: ChannelAccountRecord, received: InboundEvent[]) {
  for (const event of received.map(storable)) {
    if (event.type === 'message') {
      const { content, contentType, metadata, providerMessageId } = event
      const sender = storable(await withProfileName(app, account, event.sender))
      await receiveMessage(app, account, sender, { content, content_type: contentType, metadata, provider_message_id: providerMessageId })
    } else if (event.type === 'status') {
      await receiveStatus(app, account, event)
    } else if (event.type === 'skipped') {
      app.get('logger').warn({ channel_account_id: account.id, channel: account.channel, reason: event.reason }, 'channels: an inbound event was skipped')
    } else {
      await receiveWatermark(app, account, event)
    }
  }
}
