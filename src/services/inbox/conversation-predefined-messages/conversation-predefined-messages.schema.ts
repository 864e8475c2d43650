import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { CHANNELS, ChannelField } from '../conversations/conversations.schema.js'

export const predefinedMessageSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    title: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    shortcut: Nullable(Type.String({ pattern: '^[a-z0-9_-]{1,32}$', description: 'typed after / in the composer; unique in the organization' })),
    content: Type.String({
      minLength: 1, maxLength: 10_000, pattern: '\\S',
      description: 'placeholders: {{contact.first_name}}, {{contact.last_name}}, {{contact.full_name}}, {{user.first_name}}, {{organization.name}}'
    }),
    channels: Type.Array(ChannelField, { minItems: 1, uniqueItems: true, description: 'the channels it is offered on; default all' }),
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'ConversationPredefinedMessage', additionalProperties: false }
)
export type PredefinedMessage = Static<typeof predefinedMessageSchema>

const writable = Type.Pick(predefinedMessageSchema, ['title', 'shortcut', 'content', 'channels'])

export const predefinedMessageDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    title: writable.properties.title,
    content: writable.properties.content,
    shortcut: Type.Optional(writable.properties.shortcut),
    channels: Type.Optional(writable.properties.channels)
  },
  { $id: 'ConversationPredefinedMessageData', additionalProperties: false }
)
export type PredefinedMessageData = Static<typeof predefinedMessageDataSchema>
export const predefinedMessageDataValidator = getValidator(predefinedMessageDataSchema, dataValidator)
export const predefinedMessageDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  channels: async (value) => value ?? [...CHANNELS]
})

export const predefinedMessagePatchSchema = Type.Partial(writable, { $id: 'ConversationPredefinedMessagePatch', additionalProperties: false, minProperties: 1 })
export type PredefinedMessagePatch = Static<typeof predefinedMessagePatchSchema>
export const predefinedMessagePatchValidator = getValidator(predefinedMessagePatchSchema, dataValidator)

export const predefinedMessageQuerySchema = Type.Object(
  {
    ...listQuery(predefinedMessageSchema, ['organization_id', 'shortcut', 'created_by_user_id', 'created_at', 'updated_at'], {
      flags: {
        title: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'case-insensitive partial match' })),
        channel: Type.Optional({ ...ChannelField, description: 'offered on this channel' })
      }
    }).properties
  },
  { $id: 'ConversationPredefinedMessageQuery', additionalProperties: false }
)
export type PredefinedMessageQuery = Static<typeof predefinedMessageQuerySchema>
export const predefinedMessageQueryValidator = getValidator(predefinedMessageQuerySchema, queryValidator)
