import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { CalendarDate, EndTimeOfDay, Nullable, RecordId, TimeOfDay, listQuery, secondsOf, softDeleteTimestamps } from '../../../schemas.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'

export const reservationExceptionSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    resource_id: RecordId,
    date: CalendarDate,
    type: Type.Union([Type.Literal('blocked'), Type.Literal('special_hours')], {
      description: "special_hours: replace the weekly hours of that date; blocked: remove time (the whole day without times)"
    }),
    start_time: Nullable(TimeOfDay),
    end_time: Nullable(EndTimeOfDay),
    reason: Nullable(Type.String({ maxLength: 1000 })),
    ...softDeleteTimestamps
  },
  { $id: 'ReservationResourceException', additionalProperties: false }
)
export type ReservationException = Static<typeof reservationExceptionSchema>

const p = reservationExceptionSchema.properties
const changeable = {
  date: p.date,
  type: p.type,
  start_time: Type.Optional(p.start_time),
  end_time: Type.Optional(p.end_time),
  reason: Type.Optional(p.reason)
}

export const reservationExceptionDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), resource_id: p.resource_id, ...changeable },
  { $id: 'ReservationResourceExceptionData', additionalProperties: false }
)
export type ReservationExceptionData = Static<typeof reservationExceptionDataSchema>
export const reservationExceptionDataValidator = getValidator(reservationExceptionDataSchema, dataValidator)

export const reservationExceptionPatchSchema = Type.Partial(Type.Object(changeable), { $id: 'ReservationResourceExceptionPatch', additionalProperties: false })
export type ReservationExceptionPatch = Static<typeof reservationExceptionPatchSchema>
export const reservationExceptionPatchValidator = getValidator(reservationExceptionPatchSchema, dataValidator)

export const reservationExceptionQuerySchema = Type.Object(
  { ...listQuery(reservationExceptionSchema, ['organization_id', 'resource_id', 'date', 'type', 'created_at', 'updated_at']).properties },
  { $id: 'ReservationResourceExceptionQuery', additionalProperties: false }
)
export type ReservationExceptionQuery = Static<typeof reservationExceptionQuerySchema>
export const reservationExceptionQueryValidator = getValidator(reservationExceptionQuerySchema, queryValidator)

/** special_hours need both times; blocked takes both or neither (the whole day); end after start. */
export const checkExceptionTimes = async (context: HookContext) => {
  const before = context.method === 'patch' ? await loadBefore(context) : {}
  const { type, start_time: start, end_time: end } = { ...before, ...(context.data as object) } as ReservationException
  const errors: Record<string, string> = {}
  if ((start === null || start === undefined) !== (end === null || end === undefined)) {
    errors[start ? 'end_time' : 'start_time'] = 'is required with the other time'
  } else if (!start && type === 'special_hours') {
    errors.start_time = 'is required for special_hours'
  } else if (start && end && secondsOf(end) <= secondsOf(start)) {
    errors.end_time = 'must be later than start_time'
  }
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })
  return context
}
