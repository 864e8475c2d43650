import { BadRequest } from '@feathersjs/errors'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import type { PendingEvent } from '../../../hooks/deferred-events.js'
import { queueDelivery } from '../channels/delivery.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import type { Channel } from '../conversations/conversations.schema.js'
import { PREVIEW_LENGTH } from './conversation-messages.schema.js'
import type { ConversationMessage, ConversationMessageQuery, ConversationMessageSend } from './conversation-messages.schema.js'

export type { ConversationMessage, ConversationMessageQuery, ConversationMessageSend }
export type ConversationMessageParams = KnexAdapterParams<ConversationMessageQuery>

export interface ConversationMessageOptions extends RecordServiceOptions {
  /** The one channel whose messages this service reads, deletes and sends. */
  channel: Channel
  /** For the calls a send makes on other services (opening a playground conversation). */
  app: Application
}

/**
 * Providers deliver these channels (through the outbox, src/services/inbox/channels/delivery.ts); the others are
 * delivered on write: web-chat visitors read their thread from this API.
 */
export const PROVIDER_CHANNELS: readonly Channel[] = ['whatsapp', 'instagram', 'messenger', 'sms']

/** What a contact sent through a channel: a provider's webhook or a web-chat visitor. */
export interface ReceivedMessage {
  content: string
  content_type: string
  metadata: Record<string, unknown>
  /** The provider's id: a message is stored once per channel account and provider id. */
  provider_message_id: string | null
}

/**
 * The messages of one channel: one class for all six, each instance confined to its channel in
 * every read and write, so a message of another channel by id is simply not found.
 */
export class ConversationMessageService extends RecordService<ConversationMessage, ConversationMessageSend, ConversationMessageParams> {
  declare options: ConversationMessageOptions

  get channel() {
    return this.options.channel
  }

  /** A conversation's messages oldest first unless the caller sorts (keyset paging on created_at works both ways). */
  async find(params: ConversationMessageParams = {}): Promise<any> {
    const query = { ...(params.query ?? {}) } as Record<string, any>
    query.$sort ??= { created_at: 1 }
    return super.find({ ...params, query } as ConversationMessageParams)
  }


  /**
   * Stores a message and moves its conversation in one transaction: last_message_at and the
   * preview always; an inbound message counts as unread and marks last_inbound_at, anything the
   * team sends marks the thread read. A playground message sent with contact_id opens its
   * conversation first, through the conversations service, in the same transaction.
   */
  async _create(data: any, params: ConversationMessageParams = {} as ConversationMessageParams): Promise<any> {
    if (!params.transaction?.trx) {
      return inTransaction(this.knex, (inside) => this._create(data, { ...params, ...inside } as ConversationMessageParams))
    }
    const trx = params.transaction.trx
    const { open_with_contact_id: contactId, ...message } = data
    if (contactId !== undefined) {
      const opened = await this.app.service('conversations').create(
        { organization_id: message.organization_id, channel: this.channel, contact_id: contactId },
        { caller: params.caller, authenticated: true, transaction: params.transaction, pendingEvents: params.pendingEvents }
      )
      message.conversation_id = opened.id
    }
    const [conversation] = await trx('conversations')
      .where({ organization_id: message.organization_id, id: message.conversation_id, channel: this.channel, is_blocked: false })
      .whereNull('deleted_at')
      .update(conversationMoves(trx, message))
      .returning('*')
    if (!conversation) {
      throw new BadRequest('Validation failed', { errors: { conversation_id: 'is no longer open to messages (deleted or blocked)' } })
    }
    // The conversation moved (last message, unread count): a conversations.updated event (webhooks).
    const [moved] = await this.app.service('conversations').rendered([conversation], params)
    params.alsoChanged?.push({ path: 'conversations', method: 'patch', record: moved })
    const status = deliveryStatus(this.channel, message.direction)
    const [row] = await trx(this.table)
      .insert({
        ...message,
        channel: this.channel,
        channel_account_id: conversation.channel_account_id,
        status,
        delivered_at: status === 'delivered' ? trx.fn.now() : null
      })
      .returning('*')
    params.pendingEvents?.push({ service: this.app.service('conversations'), event: 'patched', data: moved })
    if (row.status === 'queued' && row.channel_account_id) await queueDelivery(this.app, trx, row)
    const [sent] = await this.rendered([row], params)
    return sent
  }

  /**
   * Stores a message a contact sent through a channel, in the caller's transaction. It is
   * stored once: the unique index on (channel account, provider id) decides, so a replayed or
   * concurrent delivery of the same message inserts nothing and answers undefined. Otherwise the
   * conversation moves like for any inbound message, and a snoozed or resolved one reopens.
   */
  async receive(trx: Knex.Transaction, conversation: { organization_id: number; id: number; channel_account_id: number | null }, message: ReceivedMessage, pendingEvents: PendingEvent[]) {
    const [row] = await trx(this.table)
      .insert({
        organization_id: conversation.organization_id,
        conversation_id: conversation.id,
        channel: this.channel,
        channel_account_id: conversation.channel_account_id,
        direction: 'inbound',
        sender_type: 'contact',
        content: message.content,
        content_type: message.content_type,
        metadata: JSON.stringify(message.metadata),
        provider_message_id: message.provider_message_id,
        status: 'received'
      })
      .onConflict(trx.raw('(organization_id, channel_account_id, provider_message_id) WHERE provider_message_id IS NOT NULL'))
      .ignore()
      .returning('*')
    if (!row) return undefined
    const reopening = "status IN ('snoozed', 'resolved')"
    const [moved] = await trx('conversations')
      .where({ organization_id: conversation.organization_id, id: conversation.id })
      .update({
        ...conversationMoves(trx, { direction: 'inbound', content: message.content }),
        status: trx.raw(`CASE WHEN ${reopening} THEN 'open' ELSE status END`),
        snoozed_until: trx.raw(`CASE WHEN ${reopening} THEN NULL ELSE snoozed_until END`)
      })
      .returning('*')
    const [created] = await this.rendered([row], { transaction: { trx } })
    const [conversationMoved] = await this.app.service('conversations').rendered([moved], { transaction: { trx } })
    pendingEvents.push({ service: this.app.service(`conversation-messages-${this.channel}`), event: 'created', data: created }, { service: this.app.service('conversations'), event: 'patched', data: conversationMoved })
    return row
  }

  private get app() {
    return this.options.app
  }
}

/** How a new message changes its conversation (now() is the transaction's time, so it equals the message's created_at). */
function conversationMoves(db: Knex, message: { direction: string; content: string }) {
  const moves: Record<string, unknown> = {
    last_message_at: db.fn.now(),
    last_message_preview: message.content.slice(0, PREVIEW_LENGTH),
    updated_at: db.fn.now()
  }
  if (message.direction === 'inbound') {
    moves.last_inbound_at = db.fn.now()
    moves.unread_count = db.raw('unread_count + 1')
  } else {
    moves.unread_count = 0
  }
  return moves
}

function deliveryStatus(channel: Channel, direction: string) {
  if (direction === 'inbound') return 'received'
  if (direction === 'note' || !PROVIDER_CHANNELS.includes(channel)) return 'delivered'
  return 'queued'
}

export const getOptions = (app: Application, channel: Channel): ConversationMessageOptions => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'conversation_messages',
  channel,
  // Each channel's service reads and writes its own messages only.
  where: { channel },
  app
})
