import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, UserSummary, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const CHANNELS = ['whatsapp', 'instagram', 'messenger', 'webchat', 'sms', 'playground'] as const
export type Channel = (typeof CHANNELS)[number]
export const CONVERSATION_STATUSES = ['open', 'pending', 'snoozed', 'resolved'] as const
export type ConversationStatus = (typeof CONVERSATION_STATUSES)[number]

export const ChannelField = Type.Union(CHANNELS.map((channel) => Type.Literal(channel)))
const StatusField = Type.Union(CONVERSATION_STATUSES.map((status) => Type.Literal(status)))

/** Most assignees of one conversation. */
export const MAX_ASSIGNEES = 50

export const AssigneeIds = Type.Array(RecordId, { maxItems: MAX_ASSIGNEES, description: 'user ids of members of the organization' })

export const aiContextSchema = Type.Object(
  {
    enabled: Type.Boolean(),
    paused_until: Nullable(Timestamp),
    summary: Nullable(Type.String({ maxLength: 20_000 })),
    variables: Type.Record(Type.String({ maxLength: 100 }), Type.Any(), { description: 'free variables of the assistant' })
  },
  { additionalProperties: false }
)
export type AiContext = Static<typeof aiContextSchema>
export const DEFAULT_AI_CONTEXT: AiContext = { enabled: false, paused_until: null, summary: null, variables: {} }

/** What a write sends of the AI context: any of its fields, merged into the stored ones (variables key by key). */
export const aiContextChangeSchema = Type.Partial(aiContextSchema, { additionalProperties: false })

const ContactSummary = Type.Object({
  id: RecordId, first_name: Type.String(), last_name: Nullable(Type.String()), email: Nullable(Type.String()),
  phone: Nullable(Type.String()), avatar_url: Nullable(Type.String())
})
const StageSummary = Type.Object({ id: RecordId, name: Type.String() })

export const conversationSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    channel: ChannelField,
    contact_id: RecordId,
    channel_account_id: Nullable(RecordId),
    status: StatusField,
    snoozed_until: Nullable({ ...Timestamp, description: "set exactly when status is 'snoozed'" }),
    assignee_user_ids: AssigneeIds,
    pipeline_id: Nullable(RecordId),
    pipeline_stage_id: Nullable(RecordId),
    unread_count: Type.Integer({ minimum: 0 }),
    is_blocked: Type.Boolean(),
    ai_context: aiContextSchema,
    last_message_at: Nullable(Timestamp),
    last_message_preview: Nullable(Type.String({ description: "the first 200 characters of the last message's text" })),
    last_inbound_at: Nullable({ ...Timestamp, description: 'the last message from the contact (the 24-hour service window counts from it)' }),
    contact: Type.Optional(Nullable(ContactSummary)),
    assignees: Type.Optional(Type.Array(UserSummary)),
    pipeline_stage: Type.Optional(Nullable(StageSummary)),
    ...softDeleteTimestamps
  },
  { $id: 'Conversation', additionalProperties: false }
)
export type Conversation = Static<typeof conversationSchema>

/** The fields a PATCH may change; everything else of a conversation is kept by the service. */
const patchable = {
  status: StatusField,
  snoozed_until: Nullable({ ...Timestamp, description: "a future time; required with status 'snoozed'" }),
  assignee_user_ids: AssigneeIds,
  ai_context: aiContextChangeSchema,
  unread: Type.Boolean({ description: 'false: unread_count becomes 0; true: unread_count becomes at least 1' }),
  is_blocked: Type.Boolean(),
  pipeline_id: Nullable({ ...RecordId, description: "a pipeline of type 'conversation'" }),
  pipeline_stage_id: Nullable({ ...RecordId, description: 'a stage of that pipeline' })
}

export const conversationDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    channel: ChannelField,
    contact_id: RecordId,
    channel_account_id: Type.Optional({ ...RecordId, description: 'a channel account of the same channel: where its messages are delivered (docs/channels.md)' }),
    ...Type.Partial(Type.Object(patchable)).properties
  },
  { $id: 'ConversationData', additionalProperties: false }
)
export type ConversationData = Static<typeof conversationDataSchema>
export const conversationDataValidator = getValidator(conversationDataSchema, dataValidator)

export const conversationPatchSchema = Type.Partial(Type.Object(patchable), { $id: 'ConversationPatch', additionalProperties: false, minProperties: 1 })
export type ConversationPatch = Static<typeof conversationPatchSchema>
export const conversationPatchValidator = getValidator(conversationPatchSchema, dataValidator)

export const conversationQuerySchema = Type.Object(
  {
    ...listQuery(conversationSchema, [
      'organization_id', 'channel', 'status', 'contact_id', 'channel_account_id', 'pipeline_id', 'pipeline_stage_id',
      'is_blocked', 'unread_count', 'last_message_at', 'last_inbound_at', 'snoozed_until', 'created_at', 'updated_at'
    ], {
      flags: {
        fastJoinForConversationList: Type.Optional(Type.Boolean({ description: 'adds contact and assignees to each row' })),
        assignee_user_id: Type.Optional({ ...RecordId, description: 'conversations whose assignees include this user' }),
        unassigned: Type.Optional(Type.Boolean({ description: 'true: no assignee; false: at least one' })),
        unread: Type.Optional(Type.Boolean({ description: 'true: unread_count > 0; false: unread_count = 0' })),
        searchTerm: Type.Optional(Type.String({ minLength: 2, maxLength: 200, description: "contact name, e-mail or phone, or a message's text (partial match)" }))
      }
    }).properties
  },
  { $id: 'ConversationQuery', additionalProperties: false }
)
export type ConversationQuery = Static<typeof conversationQuerySchema>
export const conversationQueryValidator = getValidator(conversationQuerySchema, queryValidator)
