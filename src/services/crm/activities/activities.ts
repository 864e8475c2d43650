import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { loadBefore, targetOrganization } from '../../../hooks/tenant-scope.js'
import { secondsOf } from '../../../schemas.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { oncePerCall } from '../../../hooks/per-call.js'
import { announceChanges } from '../../../hooks/deferred-events.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { BUILT_IN_ACTIVITY_TYPES } from '../activity-types/activity-types.schema.js'
import { ActivityService, LIST_JOINS, SINGLE_JOINS, getOptions } from './activities.class.js'
import {
  activityCompletionResultSchema, activityCompletionSchema, activityCompletionValidator, activityDataResolver,
  activityDataSchema, activityDataValidator, activityPatchResolver, activityPatchSchema, activityPatchValidator,
  activityQuerySchema, activityQueryValidator, activitySchema
} from './activities.schema.js'
import { activityMethods, activityPath } from './activities.shared.js'
import { databaseOf } from '../../../db.js'

export * from './activities.class.js'
export * from './activities.schema.js'

type ActivityContext = HookContext<ActivityService>
type Hook = (context: ActivityContext) => Promise<void | ActivityContext>

/**
 * activity_type must be a built-in type or a live custom type of the organization (matched
 * case-insensitively). A custom type is linked by id too, so renaming it keeps the link; a
 * deleted type stays on the activities that have it but cannot be chosen again.
 */
const resolveActivityType: Hook = async (context) => {
  const data = context.data as Record<string, any>
  if (data.activity_type === undefined) return
  const requested = String(data.activity_type).toLowerCase()
  if ((BUILT_IN_ACTIVITY_TYPES as readonly string[]).includes(requested)) {
    Object.assign(data, { activity_type: requested, activity_type_id: null })
    return
  }
  const organizationId = await targetOrganization(context)
  // Once per call and type: the activities of a batch mostly share a few.
  const type = await oncePerCall(context, `activity-type:${organizationId}:${requested}`, async () =>
    databaseOf(context.params, context.app.get('knex'))('activity_types')
      .select('id', 'name')
      .where({ organization_id: organizationId })
      .whereRaw('lower(name) = ?', [requested])
      .whereNull('deleted_at')
      .first())
  if (!type) {
    throw new BadRequest('Validation failed', {
      errors: { activity_type: `must be one of ${BUILT_IN_ACTIVITY_TYPES.join(', ')} or a custom activity type of this organization` }
    })
  }
  Object.assign(data, { activity_type: type.name, activity_type_id: type.id })
}

const SCHEDULE_FIELDS = ['start_date', 'start_time', 'end_date', 'end_time']

/** The end of an activity may not come before its start; on patch, the stored values fill the gaps. */
const checkSchedule: Hook = async (context) => {
  const data = context.data as Record<string, any>
  if (!SCHEDULE_FIELDS.some((field) => field in data)) return
  const schedule = context.method === 'patch' ? { ...(await loadBefore(context)), ...data } : data
  const { start_date, start_time, end_date, end_time } = schedule
  if (start_date && end_date && end_date < start_date) {
    throw new BadRequest('Validation failed', { errors: { end_date: 'must not be before start_date' } })
  }
  const sameDay = !start_date || !end_date || start_date === end_date
  // Compared as times: a stored 09:00:00 and a sent 09:00 are the same instant of the day.
  if (sameDay && start_time && end_time && secondsOf(end_time) < secondsOf(start_time)) {
    throw new BadRequest('Validation failed', { errors: { end_time: 'must not be before start_time' } })
  }
}

/**
 * Coordinates sent by the client are stored as sent (address null when absent). A patch that
 * moves the location without sending coordinates clears the old ones, to be resolved again.
 */
const prepareLocation: Hook = async (context) => {
  const data = context.data as Record<string, any>
  if (data.location_geocoded) {
    const { lat, lng, address } = data.location_geocoded
    data.location_geocoded = JSON.stringify({ lat, lng, address: address ?? null })
  } else if (context.method === 'patch' && 'location' in data && !('location_geocoded' in data)) {
    if ((await loadBefore(context)).location !== data.location) data.location_geocoded = null
  }
}

/** An unresolved location is geocoded after the write (off unless a geocoder is configured). */
const geocodeAfterWrite: Hook = async (context) => {
  const activity = context.result as any
  const data = context.data as Record<string, any>
  if (context.id === null || !activity?.location || activity.location_geocoded !== null) return
  if (context.method === 'create' || 'location' in data) context.service.geocodeLater(activity, context.params.requestId)
}

/** The rules a written activity obeys, after its body is validated and resolved. */
const activityRules: Hook[] = [resolveActivityType, checkSchedule, prepareLocation]


export const activity = (app: Application) =>
  tenantResource(app, {
    path: activityPath,
    service: new ActivityService(getOptions(app)),
    methods: activityMethods,
    description: 'Activities (calls, meetings, tasks, deadlines, e-mails, lunches and custom types) of an organization.',
    schemas: { result: activitySchema, data: activityDataSchema, patch: activityPatchSchema, query: activityQuerySchema },
    validators: { query: activityQueryValidator, data: activityDataValidator, patch: activityPatchValidator },
    resolvers: { data: activityDataResolver, patch: activityPatchResolver },
    references: {
      assigned_to_user_id: { table: 'member' },
      deal_id: { table: 'deals' },
      contact_id: { table: 'contacts' },
      company_id: { table: 'companies' }
    },
    joins: { flag: 'fastJoinForActivityList', list: LIST_JOINS, record: SINGLE_JOINS },
    rules: { create: activityRules, patch: activityRules },
    batch: { upsertKeys: { external_id: byExternalId } },
    after: { create: [geocodeAfterWrite], patch: [geocodeAfterWrite, announceChanges('activities', 'patched')] },
    multiPatch: {
      data: activityCompletionValidator,
      docs: {
        data: activityCompletionSchema,
        result: activityCompletionResultSchema,
        description: 'Sets done on many activities in one statement; ids outside your organization or deleted are left out of the answer.'
      }
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [activityPath]: ActivityService
  }
}
