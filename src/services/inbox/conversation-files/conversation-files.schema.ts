import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const conversationFileSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    conversation_id: RecordId,
    storage_key: Type.String({ maxLength: 512, description: 'the storage_key answered by POST /storage-url-signing (type conversation-file)' }),
    file_name: Type.String({ minLength: 1, maxLength: 200 }),
    file_type: Type.String({ minLength: 3, maxLength: 100, description: 'media type; must match the uploaded key' }),
    file_size: Type.Integer({ minimum: 1, description: 'bytes; must equal the uploaded object' }),
    url: Type.String({ description: 'where the file is read' }),
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'ConversationFile', additionalProperties: false }
)
export type ConversationFile = Static<typeof conversationFileSchema>

export const conversationFileDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    ...Type.Pick(conversationFileSchema, ['conversation_id', 'storage_key', 'file_name', 'file_type', 'file_size']).properties
  },
  { $id: 'ConversationFileData', additionalProperties: false }
)
export type ConversationFileData = Static<typeof conversationFileDataSchema>
export const conversationFileDataValidator = getValidator(conversationFileDataSchema, dataValidator)
export const conversationFileDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  url: async (_value, data, context) => context.app.get('storage').publicUrl(data.storage_key),
  file_type: async (value) => value?.toLowerCase()
})

export const conversationFileQuerySchema = Type.Object(
  { ...listQuery(conversationFileSchema, ['organization_id', 'conversation_id', 'file_type', 'created_by_user_id', 'created_at']).properties },
  { $id: 'ConversationFileQuery', additionalProperties: false }
)
export type ConversationFileQuery = Static<typeof conversationFileQuerySchema>
export const conversationFileQueryValidator = getValidator(conversationFileQuerySchema, queryValidator)
