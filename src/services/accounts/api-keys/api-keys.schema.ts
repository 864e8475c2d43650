import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const API_KEY_SCOPES = ['read', 'write'] as const

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
    scopes: Type.Array(Type.Union(API_KEY_SCOPES.map((scope) => Type.Literal(scope))), {
      minItems: 1, uniqueItems: true, description: "'read': GET, find and search only, any write is a 403; 'write' (the default): everything the user may do"
    }),
    expires_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    ...softDeleteTimestamps
  },
  { $id: 'ApiKey', additionalProperties: false }
)
export type ApiKey = Static<typeof apiKeySchema>

const settable = {
  scopes: Type.Optional(apiKeySchema.properties.scopes),
  expires_at: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'when the key stops working (in the future); null: never' })))
}

export const apiKeyDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), name: apiKeySchema.properties.name, ...settable },
  { $id: 'ApiKeyData', additionalProperties: false }
)
export type ApiKeyData = Static<typeof apiKeyDataSchema>
export const apiKeyDataValidator = getValidator(apiKeyDataSchema, dataValidator)

export const apiKeyPatchSchema = Type.Partial(
  Type.Object({ name: apiKeySchema.properties.name, active: Type.Boolean(), ...settable }),
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
