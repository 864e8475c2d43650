import { resolve } from '@feathersjs/schema'
import { Type, getValidator } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../declarations.js'
import { dataValidator, queryValidator } from '../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../schemas.js'

export const apiKeySchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    user_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    prefix: Type.String({ description: 'Public start of the key, for recognising it in lists' }),
    key: Type.Optional(Type.String({ description: 'The secret key; returned once, by create, and never again' })),
    key_hash: Type.Optional(Type.String()),
    active: Type.Boolean(),
    last_used_at: Nullable(Timestamp),
    ...softDeleteTimestamps
  },
  { $id: 'ApiKey', additionalProperties: false }
)
export type ApiKey = Static<typeof apiKeySchema>
export const apiKeyExternalResolver = resolve<ApiKey, HookContext>({
  key_hash: async () => undefined
})

export const apiKeyDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), name: apiKeySchema.properties.name },
  { $id: 'ApiKeyData', additionalProperties: false }
)
export type ApiKeyData = Static<typeof apiKeyDataSchema>
export const apiKeyDataValidator = getValidator(apiKeyDataSchema, dataValidator)

export const apiKeyPatchSchema = Type.Partial(
  Type.Object({ name: apiKeySchema.properties.name, active: Type.Boolean() }),
  { $id: 'ApiKeyPatch', additionalProperties: false }
)
export type ApiKeyPatch = Static<typeof apiKeyPatchSchema>
export const apiKeyPatchValidator = getValidator(apiKeyPatchSchema, dataValidator)

export const apiKeyQuerySchema = Type.Object(
  { ...listQuery(apiKeySchema, ['organization_id', 'user_id', 'name', 'active']).properties },
  { $id: 'ApiKeyQuery', additionalProperties: false }
)
export type ApiKeyQuery = Static<typeof apiKeyQuerySchema>
export const apiKeyQueryValidator = getValidator(apiKeyQuerySchema, queryValidator)
