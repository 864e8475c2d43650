import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const reservationServiceResourceSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    service_id: RecordId,
    resource_id: RecordId,
    is_required: Type.Boolean({ description: 'true: must be free for every slot; false: one of the alternatives of the service' }),
    quantity: Type.Integer({ minimum: 1, maximum: 10_000, description: 'units of the resource a booking takes per person of the party' }),
    ...softDeleteTimestamps
  },
  { $id: 'ReservationServiceResource', additionalProperties: false }
)
export type ReservationServiceResource = Static<typeof reservationServiceResourceSchema>

const p = reservationServiceResourceSchema.properties

export const reservationServiceResourceDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    service_id: p.service_id,
    resource_id: p.resource_id,
    is_required: Type.Optional(p.is_required),
    quantity: Type.Optional(p.quantity)
  },
  { $id: 'ReservationServiceResourceData', additionalProperties: false }
)
export type ReservationServiceResourceData = Static<typeof reservationServiceResourceDataSchema>
export const reservationServiceResourceDataValidator = getValidator(reservationServiceResourceDataSchema, dataValidator)

export const reservationServiceResourcePatchSchema = Type.Partial(Type.Object({ is_required: p.is_required, quantity: p.quantity }), {
  $id: 'ReservationServiceResourcePatch', additionalProperties: false
})
export type ReservationServiceResourcePatch = Static<typeof reservationServiceResourcePatchSchema>
export const reservationServiceResourcePatchValidator = getValidator(reservationServiceResourcePatchSchema, dataValidator)

export const reservationServiceResourceQuerySchema = Type.Object(
  { ...listQuery(reservationServiceResourceSchema, ['organization_id', 'service_id', 'resource_id', 'is_required', 'quantity', 'created_at', 'updated_at']).properties },
  { $id: 'ReservationServiceResourceQuery', additionalProperties: false }
)
export type ReservationServiceResourceQuery = Static<typeof reservationServiceResourceQuerySchema>
export const reservationServiceResourceQueryValidator = getValidator(reservationServiceResourceQuerySchema, queryValidator)
