import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { EndTimeOfDay, RecordId, TimeOfDay, listQuery, secondsOf, softDeleteTimestamps } from '../../../schemas.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'
import { databaseOf } from '../../../db.js'

export const reservationAvailabilitySchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    resource_id: RecordId,
    day_of_week: Type.Integer({ minimum: 0, maximum: 6, description: '0 = Sunday .. 6 = Saturday' }),
    start_time: TimeOfDay,
    end_time: EndTimeOfDay,
    ...softDeleteTimestamps
  },
  { $id: 'ReservationResourceAvailability', additionalProperties: false }
)
export type ReservationAvailability = Static<typeof reservationAvailabilitySchema>

const p = reservationAvailabilitySchema.properties

export const reservationAvailabilityDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), resource_id: p.resource_id, day_of_week: p.day_of_week, start_time: p.start_time, end_time: p.end_time },
  { $id: 'ReservationResourceAvailabilityData', additionalProperties: false }
)
export type ReservationAvailabilityData = Static<typeof reservationAvailabilityDataSchema>
export const reservationAvailabilityDataValidator = getValidator(reservationAvailabilityDataSchema, dataValidator)

export const reservationAvailabilityPatchSchema = Type.Partial(
  Type.Object({ day_of_week: p.day_of_week, start_time: p.start_time, end_time: p.end_time }),
  { $id: 'ReservationResourceAvailabilityPatch', additionalProperties: false }
)
export type ReservationAvailabilityPatch = Static<typeof reservationAvailabilityPatchSchema>
export const reservationAvailabilityPatchValidator = getValidator(reservationAvailabilityPatchSchema, dataValidator)

export const reservationAvailabilityQuerySchema = Type.Object(
  { ...listQuery(reservationAvailabilitySchema, ['organization_id', 'resource_id', 'day_of_week', 'start_time', 'end_time', 'created_at', 'updated_at']).properties },
  { $id: 'ReservationResourceAvailabilityQuery', additionalProperties: false }
)
export type ReservationAvailabilityQuery = Static<typeof reservationAvailabilityQuerySchema>
export const reservationAvailabilityQueryValidator = getValidator(reservationAvailabilityQuerySchema, queryValidator)

/**
 * A window ends after it starts, and the windows of one resource on one day never overlap
 * (the exclusion constraint enforces the latter too; this names the field first).
 */
export const checkWindow = async (context: HookContext) => {
  const data = context.data as Partial<ReservationAvailabilityData>
  const before = context.method === 'patch' ? await loadBefore(context) : {}
  const window = { ...before, ...data } as ReservationAvailabilityData & { id?: number }
  if (secondsOf(window.end_time) <= secondsOf(window.start_time)) {
    throw new BadRequest('Validation failed', { errors: { end_time: 'must be later than start_time' } })
  }
  const overlapping = await databaseOf(context.params, context.app.get('knex'))('reservation_resource_availability')
    .where({ organization_id: window.organization_id, resource_id: window.resource_id, day_of_week: window.day_of_week })
    .whereNull('deleted_at')
    .where('start_time', '<', window.end_time)
    .where('end_time', '>', window.start_time)
    .modify((q) => { if (window.id) q.whereNot('id', window.id) })
    .first('id')
  if (overlapping) {
    throw new BadRequest('Validation failed', { errors: { start_time: `overlaps the window ${overlapping.id} of this resource on that day` } })
  }
  return context
}
