import type { Params } from '@feathersjs/feathers'
import type { Application, HookContext } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { readAll, databaseOf } from '../../../db.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { CHANNELS } from '../conversations/conversations.schema.js'
import type { Channel } from '../conversations/conversations.schema.js'
import { ConversationMessageService, getOptions } from './conversation-messages.class.js'
import {
  messageDataResolver, messageQuerySchema, messageQueryValidator, messageSchema, messageSendSchema, messageSendValidator,
  playgroundSendSchema, playgroundSendValidator
} from './conversation-messages.schema.js'
import {
  OUTGOING_CHANNELS, messageMethods, messagePath, messageReadMethods, outgoingMessageMethods, outgoingPath, sendPathOf
} from './conversation-messages.shared.js'
import { renderPlaceholders } from './placeholders.js'

export * from './conversation-messages.class.js'
export * from './conversation-messages.schema.js'

type MessageContext = HookContext<ConversationMessageService>


declare module '@feathersjs/feathers' {
  interface Params {
    /** The live conversation a message is sent to, loaded once by the send rules. */
    conversation?: Record<string, any>
  }
}

/**
 * The conversation a message goes to: a live conversation of the organization, of this path's
 * channel, not blocked. The playground may name a contact instead, to open a conversation.
 */
const resolveConversation = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  const { channel } = context.service
  if (data.conversation_id === undefined) {
    if (data.contact_id === undefined) {
      throw fieldError('conversation_id', channel === 'playground' ? 'is required (or contact_id, to open a conversation)' : 'is required')
    }
    data.open_with_contact_id = data.contact_id
    delete data.contact_id
    return
  }
  if (data.contact_id !== undefined) throw fieldError('contact_id', 'must be left out when conversation_id is sent')
  const conversation = await databaseOf(context.params, context.app.get('knex'))('conversations')
    .where({ organization_id: data.organization_id, id: data.conversation_id })
    .whereNull('deleted_at')
    .first()
  if (!conversation) throw fieldError('conversation_id', 'must be a conversation of this organization')
  if (conversation.channel !== channel) {
    throw fieldError('conversation_id', `is a ${conversation.channel} conversation: send it with POST /${sendPathOf(conversation.channel)}`)
  }
  if (conversation.is_blocked) throw fieldError('conversation_id', 'is blocked: unblock it to send messages')
  context.params.conversation = conversation
}

/** Notes are the team's own; only the playground plays the customer (direction 'inbound'). */
const checkDirection = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  if (data.direction === 'inbound' && data.predefined_message_id !== undefined) {
    throw fieldError('predefined_message_id', 'is for messages of the team, not inbound ones')
  }
}

/** predefined_message_id: the content is the predefined message's, offered on this channel, with its placeholders filled. */
const fillPredefinedMessage = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  if (data.predefined_message_id === undefined) return
  if (data.content) throw fieldError('content', 'must be left out with predefined_message_id: the content comes from the predefined message')
  const db = databaseOf(context.params, context.app.get('knex'))
  const predefined = await db('conversation_predefined_messages')
    .where({ organization_id: data.organization_id, id: data.predefined_message_id })
    .whereNull('deleted_at')
    .first()
  if (!predefined) throw fieldError('predefined_message_id', 'must be a predefined message of this organization')
  if (!predefined.channels.includes(context.service.channel)) {
    throw fieldError('predefined_message_id', `is not offered on ${context.service.channel}`)
  }
  const contactId = context.params.conversation?.contact_id ?? data.open_with_contact_id
  // Inside a write's transaction (an automation sending it) the three reads go one after the other.
  const [contact, user, organization] = await readAll<[any, any, any]>(db, [
    () => db('contacts').first('first_name', 'last_name').where({ organization_id: data.organization_id, id: contactId }),
    () => db('users').first('first_name', 'last_name').where({ id: context.params.caller?.userId ?? 0 }),
    () => db('organizations').first('name').where({ id: data.organization_id })
  ])
  data.content = renderPlaceholders(predefined.content, {
    'contact.first_name': contact?.first_name,
    'contact.last_name': contact?.last_name,
    'contact.full_name': [contact?.first_name, contact?.last_name].filter(Boolean).join(' '),
    'user.first_name': user?.first_name,
    'organization.name': organization?.name
  })
  delete data.predefined_message_id
}

/** Attached files are live files of the same conversation; a reply answers a live message of it. */
const checkAttachments = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  const db = databaseOf(context.params, context.app.get('knex'))
  const where = { organization_id: data.organization_id, conversation_id: data.conversation_id ?? 0 }
  if (data.file_ids !== undefined) {
    data.file_ids = [...new Set<number>(data.file_ids)]
    const found: number[] = data.file_ids.length === 0 ? [] : await db('conversation_files').where(where).whereIn('id', data.file_ids).whereNull('deleted_at').pluck('id')
    const missing = data.file_ids.filter((id: number) => !found.includes(id))
    if (missing.length) throw fieldError('file_ids', `must be files of this conversation (not: ${missing.join(', ')})`)
  }
  if (data.reply_to_message_id !== undefined) {
    const replied = await db('conversation_messages').first('id').where({ ...where, id: data.reply_to_message_id }).whereNull('deleted_at')
    if (!replied) throw fieldError('reply_to_message_id', 'must be a message of this conversation')
  }
}

/** A template goes with content_type 'template' only; a message says something: text, files or a template. */
const checkContent = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  const contentType = data.content_type ?? (data.template ? 'template' : 'text')
  if ((contentType === 'template') !== (data.template !== undefined)) {
    throw fieldError('template', "is required with content_type 'template', and only with it")
  }
  if (!data.content?.trim() && !data.file_ids?.length && !data.template) {
    throw fieldError('content', 'is required when no files and no template are sent')
  }
}

/** Meta's channels take free-form messages only within 24 hours of the customer's last message. */
const SERVICE_WINDOW_CHANNELS: readonly Channel[] = ['whatsapp', 'instagram', 'messenger']
const SERVICE_WINDOW_MS = 24 * 3600 * 1000

/**
 * The providers' rules for a message that will be delivered (a conversation with a channel
 * account): on WhatsApp, Instagram and Messenger a free-form message needs the customer to have
 * written in the last 24 hours (our own messages do not extend the window), a WhatsApp template
 * goes at any time; these channels take one file per message, and Messenger and Instagram send a
 * file without text.
 */
const checkProviderRules = async (context: MessageContext) => {
  const data = context.data as Record<string, any>
  const conversation = context.params.conversation
  const channel = context.service.channel
  if (!conversation?.channel_account_id || data.direction === 'note' || !SERVICE_WINDOW_CHANNELS.includes(channel)) return
  if (data.template) {
    if (channel !== 'whatsapp') throw fieldError('template', 'templates are sent on WhatsApp only')
    return
  }
  if ((data.file_ids?.length ?? 0) > 1) throw fieldError('file_ids', `${channel} takes one file per message`)
  if (channel !== 'whatsapp' && data.file_ids?.length && data.content?.trim()) {
    throw fieldError('content', `must be empty with a file on ${channel}: send the text in a message of its own`)
  }
  const [{ last }] = await databaseOf(context.params, context.app.get('knex'))('conversations')
    .max({ last: 'last_inbound_at' })
    .where({ organization_id: data.organization_id, channel_account_id: conversation.channel_account_id, contact_id: conversation.contact_id })
  if (!last || new Date(last).getTime() < Date.now() - SERVICE_WINDOW_MS) {
    throw fieldError('content', `the 24-hour service window is closed: the customer has not written in the last 24 hours${channel === 'whatsapp' ? '; send a template message' : ''}`)
  }
}

const sendRules = [resolveConversation, checkDirection, fillPredefinedMessage, checkAttachments, checkContent, checkProviderRules]

/**
 * POST /conversation-messages-transform-outgoing-{channel}: the send path of a provider channel.
 * It is the channel's message service's create, with its whole chain (rules, events).
 */
class OutgoingMessages {
  constructor(private app: Application, private channel: Channel) {}

  async create(data: Record<string, unknown>, params: Params) {
    const { caller, provider, authentication } = params
    return this.app.service(messagePath(this.channel)).create(data as any, { caller, provider, authentication, authenticated: true })
  }
}

/** A channel as people write it, in the summaries of the OpenAPI document. */
const channelName = (channel: Channel) => ({ whatsapp: 'WhatsApp', instagram: 'Instagram', messenger: 'Messenger', sms: 'SMS', webchat: 'web chat' } as Partial<Record<Channel, string>>)[channel] ?? channel

export const conversationMessages = (app: Application) => {
  for (const channel of CHANNELS) {
    const sendSchema = channel === 'playground' ? playgroundSendSchema : messageSendSchema
    tenantResource(app, {
      path: messagePath(channel),
      docs: { noun: { one: `${channelName(channel)} message` } },
      service: new ConversationMessageService(getOptions(app, channel)),
      methods: channel === 'sms' || channel === 'playground' ? messageMethods : messageReadMethods,
      description: `Messages of ${channel} conversations ($limit at most 50; oldest first; keyset paging with created_at $lt/$gt)` +
        (channel === 'sms' || channel === 'playground' ? '; POST sends one.' : `; send with POST /${outgoingPath(channel)}.`),
      schemas: { result: messageSchema, data: sendSchema, query: messageQuerySchema },
      validators: { query: messageQueryValidator, data: channel === 'playground' ? playgroundSendValidator : messageSendValidator },
      resolvers: { data: messageDataResolver },
      references: { contact_id: { table: 'contacts' } },
      rules: { create: sendRules },
      alsoChanges: { create: ['conversations.updated'] }
    })
  }
  for (const channel of OUTGOING_CHANNELS) {
    tenantOperation(app, {
      path: outgoingPath(channel),
      summary: `Send a ${channelName(channel)} message, or add a note to the conversation`,
      service: new OutgoingMessages(app, channel),
      methods: outgoingMessageMethods,
      description: `Sends a message to a ${channel} conversation (status 'queued' until the provider delivers it), or adds a note.`,
      schemas: { data: messageSendSchema, result: messageSchema },
      // The body is validated once, by the channel's message service it is handed to.
      validators: {}
    })
  }
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    'conversation-messages-whatsapp': ConversationMessageService
    'conversation-messages-instagram': ConversationMessageService
    'conversation-messages-messenger': ConversationMessageService
    'conversation-messages-webchat': ConversationMessageService
    'conversation-messages-sms': ConversationMessageService
    'conversation-messages-playground': ConversationMessageService
    'conversation-messages-transform-outgoing-whatsapp': OutgoingMessages
    'conversation-messages-transform-outgoing-instagram': OutgoingMessages
    'conversation-messages-transform-outgoing-messenger': OutgoingMessages
    'conversation-messages-transform-outgoing-webchat': OutgoingMessages
  }
}
