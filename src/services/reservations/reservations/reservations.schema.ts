import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const RESERVATION_STATUSES = ['pending', 'confirmed', 'cancelled', 'completed', 'no_show'] as const
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number]
export const FINAL_STATUSES: readonly ReservationStatus[] = ['cancelled', 'completed', 'no_show']
/** The moves a status may make; final states make none. */
export const STATUS_MOVES: Record<ReservationStatus, readonly ReservationStatus[]> = {
  pending: ['confirmed', 'cancelled'],
  confirmed: ['cancelled', 'completed', 'no_show'],
  cancelled: [],
  completed: [],
  no_show: []
}
/** Statuses whose reservations hold their units (block time). */
export const ACTIVE_STATUSES: readonly ReservationStatus[] = ['pending', 'confirmed']

const Literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(values.map((v) => Type.Literal(v)), description ? { description } : {})

const ContactSummary = Type.Object({
  id: RecordId, first_name: Nullable(Type.String()), last_name: Nullable(Type.String()), email: Nullable(Type.String()), phone: Nullable(Type.String())
})
const ServiceSummary = Type.Object({ id: RecordId, name: Type.String(), duration_minutes: Type.Integer() })
const ResourceSummary = Type.Object({ id: RecordId, name: Type.String() })

export const reservationSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    service_id: RecordId,
    contact_id: RecordId,
    resource_id: Nullable(Type.Integer({ minimum: 1, description: 'input: the preferred resource; output: the resource allocated' })),
    start_datetime: Type.String({ format: 'date-time', description: 'ISO 8601; must be a start offered by /reservation-available-slots' }),
    end_datetime: Timestamp,
    party_size: Type.Integer({ minimum: 1, maximum: 10_000 }),
    status: Literals(RESERVATION_STATUSES),
    notes: Nullable(Type.String({ maxLength: 10_000 })),
    deal_id: Nullable(Type.Integer({ minimum: 1 })),
    company_id: Nullable(Type.Integer({ minimum: 1 })),
    custom_fields_by_key: Type.Record(Type.String(), Type.Any(), { description: "custom field key to value (entity_type 'reservation')" }),
    cancelled_at: Nullable(Timestamp),
    cancelled_by: Nullable(Literals(['organization', 'contact'] as const)),
    cancellation_reason: Nullable(Type.String({ maxLength: 2000 })),
    source: Literals(['api', 'booking_link', 'assistant'] as const),
    booking_link_id: Nullable(RecordId),
    created_by_user_id: Nullable(RecordId),
    contact: Type.Optional(Nullable(ContactSummary)),
    service: Type.Optional(Nullable(ServiceSummary)),
    resource: Type.Optional(Nullable(ResourceSummary)),
    ...softDeleteTimestamps
  },
  { $id: 'Reservation', additionalProperties: false }
)
export type Reservation = Static<typeof reservationSchema>


const p = reservationSchema.properties
const references = {
  notes: Type.Optional(p.notes),
  deal_id: Type.Optional(p.deal_id),
  company_id: Type.Optional(p.company_id),
  custom_fields_by_key: Type.Optional(p.custom_fields_by_key)
}

export const reservationDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    service_id: p.service_id,
    contact_id: p.contact_id,
    start_datetime: p.start_datetime,
    resource_id: Type.Optional(p.resource_id),
    party_size: Type.Optional(p.party_size),
    ...references
  },
  { $id: 'ReservationData', additionalProperties: false }
)
export type ReservationData = Static<typeof reservationDataSchema>
export const reservationDataValidator = getValidator(reservationDataSchema, dataValidator)
export const reservationDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null
})

export const reservationPatchSchema = Type.Partial(
  Type.Object({
    start_datetime: p.start_datetime,
    resource_id: p.resource_id,
    party_size: p.party_size,
    contact_id: p.contact_id,
    status: p.status,
    cancellation_reason: p.cancellation_reason,
    ...references
  }),
  { $id: 'ReservationPatch', additionalProperties: false }
)
export type ReservationPatch = Static<typeof reservationPatchSchema>
export const reservationPatchValidator = getValidator(reservationPatchSchema, dataValidator)

export const reservationQuerySchema = Type.Object(
  {
    ...listQuery(
      reservationSchema,
      ['organization_id', 'status', 'service_id', 'resource_id', 'contact_id', 'deal_id', 'company_id', 'source', 'start_datetime', 'end_datetime', 'created_at', 'updated_at'],
      {
        flags: {
          searchTerm: Type.Optional(Type.String({ minLength: 2, maxLength: 200, description: "partial match on the contact's name, e-mail or phone" })),
          fastJoinForReservationList: Type.Optional(Type.Boolean({ description: 'adds contact, service and resource to each row' }))
        }
      }
    ).properties
  },
  { $id: 'ReservationQuery', additionalProperties: false }
)
export type ReservationQuery = Static<typeof reservationQuerySchema>
export const reservationQueryValidator = getValidator(reservationQuerySchema, queryValidator)
