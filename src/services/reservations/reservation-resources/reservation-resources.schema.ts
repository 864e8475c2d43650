import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, TimeZoneField, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'

export const reservationResourceSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 300 }),
    description: Nullable(Type.String({ maxLength: 10_000 })),
    type: Type.Union([Type.Literal('person'), Type.Literal('room'), Type.Literal('equipment')]),
    capacity: Type.Integer({ minimum: 1, maximum: 10_000, description: 'units that can be booked at the same time' }),
    user_id: Nullable(Type.Integer({ minimum: 1, description: 'for a person: a member of the organization' })),
    timezone: TimeZoneField,
    is_active: Type.Boolean(),
    ...softDeleteTimestamps
  },
  { $id: 'ReservationResource', additionalProperties: false }
)
export type ReservationResource = Static<typeof reservationResourceSchema>

const p = reservationResourceSchema.properties
const optional = {
  description: Type.Optional(p.description),
  capacity: Type.Optional(p.capacity),
  user_id: Type.Optional(p.user_id),
  timezone: Type.Optional(p.timezone),
  is_active: Type.Optional(p.is_active)
}

export const reservationResourceDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), name: p.name, type: p.type, ...optional },
  { $id: 'ReservationResourceData', additionalProperties: false }
)
export type ReservationResourceData = Static<typeof reservationResourceDataSchema>
export const reservationResourceDataValidator = getValidator(reservationResourceDataSchema, dataValidator)

export const reservationResourcePatchSchema = Type.Partial(Type.Object({ name: p.name, type: p.type, ...optional }), {
  $id: 'ReservationResourcePatch', additionalProperties: false
})
export type ReservationResourcePatch = Static<typeof reservationResourcePatchSchema>
export const reservationResourcePatchValidator = getValidator(reservationResourcePatchSchema, dataValidator)

export const reservationResourceQuerySchema = Type.Object(
  {
    ...listQuery(reservationResourceSchema, ['organization_id', 'name', 'type', 'capacity', 'user_id', 'is_active', 'timezone', 'created_at', 'updated_at'], {
      operators: { name: { $ilike: Type.String() } }
    }).properties
  },
  { $id: 'ReservationResourceQuery', additionalProperties: false }
)
export type ReservationResourceQuery = Static<typeof reservationResourceQuerySchema>
export const reservationResourceQueryValidator = getValidator(reservationResourceQuerySchema, queryValidator)

/** Only a person is a member of the organization: user_id on a room or equipment → 400. */
export const checkPersonUser = async (context: HookContext) => {
  const data = context.data as ReservationResourcePatch
  const type = data.type ?? (context.method === 'patch' ? (await loadBefore(context)).type : undefined)
  const userId = data.user_id !== undefined ? data.user_id : context.method === 'patch' ? (await loadBefore(context)).user_id : null
  if (userId !== null && userId !== undefined && type !== 'person') {
    throw new BadRequest('Validation failed', { errors: { user_id: 'is only for a resource of type person' } })
  }
  return context
}
