import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { queryValidator, getValidator } from '../../../validators.js'
import { CalendarDate, RecordId, Timestamp } from '../../../schemas.js'

export const availableSlotsQuerySchema = Type.Object(
  {
    service_id: RecordId,
    date: Type.String({ ...CalendarDate, description: "calendar date in the service's time zone" }),
    organization_id: Type.Optional(RecordId),
    resource_id: Type.Optional(Type.Integer({ minimum: 1, description: 'narrows the slots to this resource of the service' })),
    party_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'default 1' }))
  },
  { $id: 'AvailableSlotsQuery', additionalProperties: false }
)
export type AvailableSlotsQuery = Static<typeof availableSlotsQuerySchema>
export const availableSlotsQueryValidator = getValidator(availableSlotsQuerySchema, queryValidator)

export const availableSlotSchema = Type.Object(
  {
    start_datetime: Timestamp,
    end_datetime: Timestamp,
    resource_ids: Type.Array(RecordId, { description: 'the free alternatives at this start, or the required resources when the service has no alternatives' })
  },
  { $id: 'AvailableSlot', additionalProperties: false }
)
export type AvailableSlot = Static<typeof availableSlotSchema>

export const availableSlotsSchema = Type.Object(
  {
    service_id: RecordId,
    date: CalendarDate,
    timezone: Type.String({ description: "the service's effective time zone" }),
    data: Type.Array(availableSlotSchema)
  },
  { $id: 'AvailableSlots', additionalProperties: false }
)
export type AvailableSlots = Static<typeof availableSlotsSchema>
