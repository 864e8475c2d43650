import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { DecimalString, MoneyInput, Nullable, RecordId, TimeZoneField, listQuery, softDeleteTimestamps } from '../../../schemas.js'

const Minutes = (description: string, minimum = 0) => Type.Integer({ minimum, maximum: 525_600, description })

export const reservationServiceSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 300 }),
    description: Nullable(Type.String({ maxLength: 10_000 })),
    duration_minutes: Minutes('length of the service', 1),
    slot_interval_minutes: Minutes('step between offered starts; default: the duration', 1),
    buffer_before_minutes: Minutes('free time needed before the service'),
    buffer_after_minutes: Minutes('free time needed after the service'),
    min_notice_minutes: Minutes('no start earlier than now + this'),
    max_advance_days: Type.Integer({ minimum: 0, maximum: 3650, description: 'no start later than now + this many days' }),
    max_party_size: Nullable(Type.Integer({ minimum: 1, maximum: 10_000 })),
    requires_confirmation: Type.Boolean({ description: 'new reservations start pending instead of confirmed' }),
    is_active: Type.Boolean(),
    timezone: TimeZoneField,
    price: Nullable(DecimalString),
    currency: Nullable(Type.String({ pattern: '^[A-Z]{3}$' })),
    image_url: Nullable(Type.String({ format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2000, description: 'public URL from POST /storage-url-signing (type reservation-service-image)' })),
    ...softDeleteTimestamps
  },
  { $id: 'ReservationService', additionalProperties: false }
)
export type ReservationService = Static<typeof reservationServiceSchema>

const p = reservationServiceSchema.properties
const optional = {
  description: Type.Optional(p.description),
  slot_interval_minutes: Type.Optional(p.slot_interval_minutes),
  buffer_before_minutes: Type.Optional(p.buffer_before_minutes),
  buffer_after_minutes: Type.Optional(p.buffer_after_minutes),
  min_notice_minutes: Type.Optional(p.min_notice_minutes),
  max_advance_days: Type.Optional(p.max_advance_days),
  max_party_size: Type.Optional(p.max_party_size),
  requires_confirmation: Type.Optional(p.requires_confirmation),
  is_active: Type.Optional(p.is_active),
  timezone: Type.Optional(p.timezone),
  // Decimal places of a number are checked by checkAmounts (multipleOf on binary floats would refuse 19.9).
  price: Type.Optional(Nullable(MoneyInput())),
  currency: Type.Optional(p.currency),
  image_url: Type.Optional(p.image_url)
}

export const reservationServiceDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), name: p.name, duration_minutes: p.duration_minutes, ...optional },
  { $id: 'ReservationServiceData', additionalProperties: false }
)
export type ReservationServiceData = Static<typeof reservationServiceDataSchema>
export const reservationServiceDataValidator = getValidator(reservationServiceDataSchema, dataValidator)
export const reservationServiceDataResolver = resolve<any, HookContext>({
  slot_interval_minutes: async (value, data) => value ?? data.duration_minutes
})

export const reservationServicePatchSchema = Type.Partial(
  Type.Object({ name: p.name, duration_minutes: p.duration_minutes, ...optional }),
  { $id: 'ReservationServicePatch', additionalProperties: false }
)
export type ReservationServicePatch = Static<typeof reservationServicePatchSchema>
export const reservationServicePatchValidator = getValidator(reservationServicePatchSchema, dataValidator)

export const reservationServiceQuerySchema = Type.Object(
  {
    ...listQuery(reservationServiceSchema, ['organization_id', 'name', 'is_active', 'requires_confirmation', 'duration_minutes', 'timezone', 'currency', 'created_at', 'updated_at'], {
      operators: { name: { $ilike: Type.String() } }
    }).properties
  },
  { $id: 'ReservationServiceQuery', additionalProperties: false }
)
export type ReservationServiceQuery = Static<typeof reservationServiceQuerySchema>
export const reservationServiceQueryValidator = getValidator(reservationServiceQuerySchema, queryValidator)
