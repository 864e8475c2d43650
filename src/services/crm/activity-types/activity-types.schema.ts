import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

/** The types every organization has without creating them; custom types may not reuse these names. */
export const BUILT_IN_ACTIVITY_TYPES = ['call', 'meeting', 'task', 'deadline', 'email', 'lunch'] as const

/** Icon names of the open-source icon set the spec refers to. */
export const ICON_KEYS = [
  'phone', 'calendar', 'users', 'check-square', 'map-pin', 'clipboard', 'coffee', 'message-circle', 'video', 'file-text', 'award'
] as const

export const activityTypeSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
    color: Nullable(Type.String({ pattern: '^#[0-9A-Fa-f]{6}$', description: 'hex colour #RRGGBB' })),
    icon_key: Nullable(Type.Union(ICON_KEYS.map((key) => Type.Literal(key)))),
    activities_count: Type.Optional(Type.Integer({ minimum: 0, description: 'live activities of this type; single-record reads only' })),
    ...softDeleteTimestamps
  },
  { $id: 'ActivityType', additionalProperties: false }
)
export type ActivityType = Static<typeof activityTypeSchema>

const writable = {
  name: activityTypeSchema.properties.name,
  color: Type.Optional(activityTypeSchema.properties.color),
  icon_key: Type.Optional(activityTypeSchema.properties.icon_key)
}

export const activityTypeDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'ActivityTypeData', additionalProperties: false }
)
export type ActivityTypeData = Static<typeof activityTypeDataSchema>
export const activityTypeDataValidator = getValidator(activityTypeDataSchema, dataValidator)

export const activityTypePatchSchema = Type.Partial(Type.Object(writable), {
  $id: 'ActivityTypePatch', additionalProperties: false, minProperties: 1
})
export type ActivityTypePatch = Static<typeof activityTypePatchSchema>
export const activityTypePatchValidator = getValidator(activityTypePatchSchema, dataValidator)

export const activityTypeQuerySchema = Type.Object(
  {
    ...listQuery(activityTypeSchema, ['organization_id', 'name', 'color', 'icon_key', 'created_at', 'updated_at']).properties,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'case-insensitive partial match' }))
  },
  { $id: 'ActivityTypeQuery', additionalProperties: false }
)
export type ActivityTypeQuery = Static<typeof activityTypeQuerySchema>
export const activityTypeQueryValidator = getValidator(activityTypeQuerySchema, queryValidator)
