import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { DecimalString, Nullable, RecordId, Timestamp } from '../../../schemas.js'
import { personFields } from '../../../lib/person-fields.js'
import { pageConfigSchema } from '../reservation-booking-links/reservation-booking-links.schema.js'
import { availableSlotsQuerySchema } from '../reservation-available-slots/reservation-available-slots.schema.js'
import { reservationSchema } from '../reservations/reservations.schema.js'

export const publicServiceSchema = Type.Object(
  {
    id: RecordId,
    name: Type.String(),
    description: Nullable(Type.String()),
    duration_minutes: Type.Integer(),
    max_party_size: Nullable(Type.Integer()),
    price: Nullable(DecimalString),
    currency: Nullable(Type.String()),
    image_url: Nullable(Type.String()),
    timezone: Type.String()
  },
  { $id: 'PublicBookingService', additionalProperties: false }
)

export const publicBookingPageSchema = Type.Object(
  { name: Type.String(), page_config: pageConfigSchema, services: Type.Array(publicServiceSchema) },
  { $id: 'PublicBookingPage', additionalProperties: false }
)
export type PublicBookingPage = Static<typeof publicBookingPageSchema>

const q = availableSlotsQuerySchema.properties
export const publicSlotsQuerySchema = Type.Object(
  { service_id: q.service_id, date: q.date, party_size: q.party_size },
  { $id: 'PublicSlotsQuery', additionalProperties: false }
)
export type PublicSlotsQuery = Static<typeof publicSlotsQuerySchema>
export const publicSlotsQueryValidator = getValidator(publicSlotsQuerySchema, queryValidator)

export const publicSlotsSchema = Type.Object(
  {
    service_id: RecordId,
    date: Type.String(),
    timezone: Type.String(),
    data: Type.Array(Type.Object({ start_datetime: Timestamp, end_datetime: Timestamp }))
  },
  { $id: 'PublicSlots', additionalProperties: false }
)

const c = personFields
export const publicBookingDataSchema = Type.Object(
  {
    service_id: RecordId,
    start_datetime: reservationSchema.properties.start_datetime,
    party_size: Type.Optional(reservationSchema.properties.party_size),
    contact: Type.Object(
      {
        first_name: c.first_name,
        last_name: Type.Optional(c.last_name),
        email: Type.String({ format: 'email', maxLength: 320, description: 'the contact is matched by e-mail within the organization, or created' }),
        phone: Type.Optional({ ...c.phone, description: 'stored as given; must be a valid number for its region (phone_country_iso, else phone_country_code) unless written with its country code, else 400 errors["contact.phone"]' }),
        phone_country_code: Type.Optional(c.phone_country_code),
        phone_country_iso: Type.Optional(c.phone_country_iso)
      },
      { additionalProperties: false }
    ),
    notes: Type.Optional(reservationSchema.properties.notes),
    custom_fields_by_key: Type.Optional(reservationSchema.properties.custom_fields_by_key)
  },
  { $id: 'PublicBookingData', additionalProperties: false }
)
export type PublicBookingData = Static<typeof publicBookingDataSchema>
export const publicBookingDataValidator = getValidator(publicBookingDataSchema, dataValidator)

export const publicReservationSchema = Type.Object(
  {
    id: RecordId,
    service_id: RecordId,
    start_datetime: Timestamp,
    end_datetime: Timestamp,
    party_size: Type.Integer(),
    status: reservationSchema.properties.status,
    notes: Nullable(Type.String()),
    custom_fields_by_key: reservationSchema.properties.custom_fields_by_key,
    cancelled_at: Nullable(Timestamp),
    cancelled_by: reservationSchema.properties.cancelled_by
  },
  { $id: 'PublicReservation', additionalProperties: false }
)
export type PublicReservation = Static<typeof publicReservationSchema>

export const publicBookingResultSchema = Type.Object(
  {
    reservation: publicReservationSchema,
    manage_token: Type.String({ description: 'shown once: POST /public/reservations/<manage_token>/cancel cancels the reservation' })
  },
  { $id: 'PublicBookingResult', additionalProperties: false }
)

export const publicCancelDataSchema = Type.Object(
  { reason: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))) },
  { $id: 'PublicCancelData', additionalProperties: false }
)
export type PublicCancelData = Static<typeof publicCancelDataSchema>
export const publicCancelDataValidator = getValidator(publicCancelDataSchema, dataValidator)
