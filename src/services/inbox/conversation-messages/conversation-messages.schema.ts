import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { ChannelField } from '../conversations/conversations.schema.js'

export const DIRECTIONS = ['inbound', 'outbound', 'note'] as const
export const SENDER_TYPES = ['contact', 'user', 'assistant', 'system'] as const
export const CONTENT_TYPES = ['text', 'image', 'audio', 'video', 'file', 'location', 'template'] as const
export const MESSAGE_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'received'] as const
/** Characters of a message's text kept as its conversation's last_message_preview. */
export const PREVIEW_LENGTH = 200
export const MAX_FILES_PER_MESSAGE = 10

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((value) => Type.Literal(value)))

export const templateSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 512 }),
    language: Type.String({ minLength: 2, maxLength: 16 }),
    components: Type.Array(Type.Record(Type.String(), Type.Any()), { maxItems: 20 })
  },
  { additionalProperties: false, description: "a provider template (WhatsApp); only with content_type 'template'" }
)

export const messageSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    conversation_id: RecordId,
    channel: ChannelField,
    channel_account_id: Nullable(RecordId),
    direction: Type.Union(DIRECTIONS.map((d) => Type.Literal(d)), { description: "'inbound' from the contact, 'outbound' to the contact, 'note' internal (never sent)" }),
    sender_type: literals(SENDER_TYPES),
    sender_user_id: Nullable(RecordId),
    content: Type.String({ maxLength: 10_000 }),
    content_type: literals(CONTENT_TYPES),
    file_ids: Type.Array(RecordId, { maxItems: MAX_FILES_PER_MESSAGE, description: 'conversation files of the same conversation' }),
    template: Nullable(templateSchema),
    reply_to_message_id: Nullable(RecordId),
    provider_message_id: Nullable(Type.String()),
    status: Type.Union(MESSAGE_STATUSES.map((s) => Type.Literal(s)), { description: "'queued' until the provider accepts it, then 'sent', 'delivered', 'read' (forward only) or 'failed' with error; 'delivered' at once for the playground, web chat and notes; 'received' for inbound" }),
    error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
    metadata: Type.Record(Type.String(), Type.Any(), { description: "what the provider told beyond the text: media ({id, mime_type, url?}), location, interactive reply; {} otherwise" }),
    sent_at: Nullable(Timestamp),
    delivered_at: Nullable(Timestamp),
    read_at: Nullable(Timestamp),
    ...softDeleteTimestamps
  },
  { $id: 'ConversationMessage', additionalProperties: false }
)
export type ConversationMessage = Static<typeof messageSchema>

const sendFields = {
  organization_id: Type.Optional(RecordId),
  conversation_id: Type.Optional(RecordId),
  content: Type.Optional(Type.String({ maxLength: 10_000, description: 'may be empty when files or a template are sent' })),
  content_type: Type.Optional(literals(CONTENT_TYPES)),
  file_ids: Type.Optional(Type.Array(RecordId, { maxItems: MAX_FILES_PER_MESSAGE })),
  template: Type.Optional(templateSchema),
  predefined_message_id: Type.Optional({ ...RecordId, description: 'fills content from this predefined message, placeholders rendered' }),
  reply_to_message_id: Type.Optional(RecordId)
}

/** POST /conversation-messages-transform-outgoing-{channel} and /conversation-messages-sms. */
export const messageSendSchema = Type.Object(
  { ...sendFields, direction: Type.Optional(Type.Union([Type.Literal('outbound'), Type.Literal('note')], { description: "'outbound' (default) or 'note'" })) },
  { $id: 'ConversationMessageSend', additionalProperties: false }
)
export type ConversationMessageSend = Static<typeof messageSendSchema>
export const messageSendValidator = getValidator(messageSendSchema, dataValidator)

/** POST /conversation-messages-playground: also opens a conversation with a contact, and plays the customer's side. */
export const playgroundSendSchema = Type.Object(
  {
    ...sendFields,
    contact_id: Type.Optional({ ...RecordId, description: 'without conversation_id: opens a playground conversation with this contact' }),
    direction: Type.Optional(Type.Union(DIRECTIONS.map((d) => Type.Literal(d)), { description: "'outbound' (default), 'note', or 'inbound' to simulate the customer" }))
  },
  { $id: 'PlaygroundMessageSend', additionalProperties: false }
)
export const playgroundSendValidator = getValidator(playgroundSendSchema, dataValidator)

export const messageQuerySchema = Type.Object(
  {
    ...listQuery(messageSchema, ['organization_id', 'conversation_id', 'direction', 'status', 'sender_type', 'content_type', 'created_at']).properties
  },
  { $id: 'ConversationMessageQuery', additionalProperties: false }
)
export type ConversationMessageQuery = Static<typeof messageQuerySchema>
export const messageQueryValidator = getValidator(messageQuerySchema, queryValidator)

/** Server-set fields of a new message; the channel-specific ones (channel, status) are set by the service. */
export const messageDataResolver = resolve<any, HookContext>({
  direction: async (value) => value ?? 'outbound',
  sender_type: async (_value, data) => (data.direction === 'inbound' ? 'contact' : 'user'),
  sender_user_id: async (_value, data, context) => (data.direction === 'inbound' ? null : context.params.caller?.userId ?? null),
  content: async (value) => value ?? '',
  content_type: async (value, data) => value ?? (data.template ? 'template' : 'text'),
  template: async (value) => (value ? JSON.stringify(value) : null)
})
