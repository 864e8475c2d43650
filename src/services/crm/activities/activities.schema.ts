import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { CalendarDate, Nullable, RecordId, TimeOfDay, filterOn, listQuery, softDeleteTimestamps, ExternalId } from '../../../schemas.js'
import { BUILT_IN_ACTIVITY_TYPES } from '../activity-types/activity-types.schema.js'

const Text = (maxLength: number) => Nullable(Type.String({ maxLength }))


export const geoPointSchema = Type.Object(
  {
    lat: Type.Number({ minimum: -90, maximum: 90 }),
    lng: Type.Number({ minimum: -180, maximum: 180 }),
    address: Type.Optional(Nullable(Type.String({ maxLength: 1000 })))
  },
  { additionalProperties: false }
)

const UserRef = Type.Object({ id: RecordId, full_name: Type.String(), email: Type.Optional(Type.String()) })
const DealRef = Type.Object({
  id: RecordId,
  name: Type.String(),
  stage: Type.Optional(Nullable(Type.Object({ id: RecordId, name: Type.String() }, { description: "the deal's pipeline stage" })))
})
const ContactRef = Type.Object({ id: RecordId, full_name: Type.String(), email: Type.Optional(Nullable(Type.String())) })
const CompanyRef = Type.Object({ id: RecordId, name: Type.String(), website: Type.Optional(Nullable(Type.String())) })

export const activitySchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    created_by_user_id: Nullable(RecordId),
    assigned_to_user_id: Nullable(RecordId),
    subject: Text(500),
    note: Text(20_000),
    public_description: Text(20_000),
    location: Text(1000),
    location_geocoded: Nullable(geoPointSchema),
    start_date: Nullable(CalendarDate),
    start_time: Nullable(TimeOfDay),
    end_date: Nullable(CalendarDate),
    end_time: Nullable(TimeOfDay),
    duration: Nullable(Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'whole minutes' })),
    deal_id: Nullable(RecordId),
    contact_id: Nullable(RecordId),
    company_id: Nullable(RecordId),
    activity_type: Type.String({ minLength: 1, maxLength: 100, description: `built-in (${BUILT_IN_ACTIVITY_TYPES.join(', ')}) or the name of a custom activity type` }),
    activity_type_id: Nullable(RecordId),
    done: Type.Boolean(),
    created_by_user: Type.Optional(Nullable(UserRef)),
    assigned_to_user: Type.Optional(Nullable(UserRef)),
    deal: Type.Optional(Nullable(DealRef)),
    contact: Type.Optional(Nullable(ContactRef)),
    company: Type.Optional(Nullable(CompanyRef)),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'Activity', additionalProperties: false }
)
export type Activity = Static<typeof activitySchema>

const writableKeys = [
  'assigned_to_user_id', 'subject', 'note', 'public_description', 'location', 'location_geocoded',
  'start_date', 'start_time', 'end_date', 'end_time', 'duration', 'deal_id', 'contact_id', 'company_id',
  'activity_type', 'done', 'external_id'
] as const
const writable = Type.Pick(activitySchema, [...writableKeys])

export const activityDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...Type.Partial(writable).properties },
  { $id: 'ActivityData', additionalProperties: false }
)
export type ActivityData = Static<typeof activityDataSchema>
export const activityDataValidator = getValidator(activityDataSchema, dataValidator)

export const activityPatchSchema = Type.Partial(writable, { $id: 'ActivityPatch', additionalProperties: false, minProperties: 1 })
export type ActivityPatch = Static<typeof activityPatchSchema>
export const activityPatchValidator = getValidator(activityPatchSchema, dataValidator)

/** PATCH /activities with no id: completes (or reopens) many activities in one statement. */
export const activityCompletionSchema = Type.Object(
  {
    ids: Type.Array(RecordId, { minItems: 1, maxItems: 500 }),
    done: Type.Boolean()
  },
  { $id: 'ActivityCompletion', additionalProperties: false }
)
export type ActivityCompletion = Static<typeof activityCompletionSchema>
export const activityCompletionValidator = getValidator(activityCompletionSchema, dataValidator)
export const activityCompletionResultSchema = Type.Object(
  { updated: Type.Integer({ minimum: 0 }), ids: Type.Array(RecordId) },
  { $id: 'ActivityCompletionResult' }
)
export type ActivityCompletionResult = Static<typeof activityCompletionResultSchema>

/** HH:MM becomes HH:MM:00, so that stored and compared times always carry seconds. */
export const withSeconds = (time: string | null | undefined) =>
  typeof time === 'string' && time.length === 5 ? `${time}:00` : time

const times = {
  start_time: async (value: string | null | undefined) => withSeconds(value),
  end_time: async (value: string | null | undefined) => withSeconds(value)
}

export const activityDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  activity_type: async (value) => value ?? 'task',
  ...times
})
export const activityPatchResolver = resolve<any, HookContext>(times)

const sortable = [
  'id', 'subject', 'start_date', 'start_time', 'end_date', 'end_time', 'duration', 'activity_type', 'done',
  'assigned_to_user_id', 'deal_id', 'contact_id', 'company_id', 'created_at', 'updated_at'
]

export const activityQuerySchema = Type.Object(
  {
    ...listQuery(activitySchema, [
      'organization_id', 'assigned_to_user_id', 'created_by_user_id', 'deal_id', 'contact_id', 'company_id', 'activity_type', 'done', 'external_id',
      'created_at', 'updated_at'
    ], {
      sync: true,
      flags: {
        fastJoinForActivityList: Type.Optional(Type.Boolean({ description: 'adds created_by_user, assigned_to_user, deal, contact and company to each row' }))
      }
    }).properties,
    start_date: filterOn(CalendarDate),
    end_date: filterOn(CalendarDate),
    subject: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'case-insensitive partial match' })),
    $sort: Type.Optional(Type.Object(
      Object.fromEntries(sortable.map((key) => [key, Type.Optional(Type.Integer({ minimum: -1, maximum: 1 }))])),
      { additionalProperties: false }
    ))
  },
  { $id: 'ActivityQuery', additionalProperties: false }
)
export type ActivityQuery = Static<typeof activityQuerySchema>
export const activityQueryValidator = getValidator(activityQuerySchema, queryValidator)
