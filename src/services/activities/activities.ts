import { BadRequest } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { loadBefore, scopeToTenant, targetOrganization } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { BUILT_IN_ACTIVITY_TYPES } from '../activity-types/activity-types.schema.js'
import { ActivityService, getOptions } from './activities.class.js'
import {
  activityCompletionResultSchema, activityCompletionSchema, activityCompletionValidator, activityDataResolver,
  activityDataSchema, activityDataValidator, activityIdQueryValidator, activityPatchResolver, activityPatchSchema, activityPatchValidator,
  activityQuerySchema, activityQueryValidator, activitySchema
} from './activities.schema.js'
import { activityMethods, activityPath } from './activities.shared.js'

export * from './activities.class.js'
export * from './activities.schema.js'

type ActivityContext = HookContext<ActivityService>
type Hook = (context: ActivityContext) => Promise<void | ActivityContext>

const references = verifyReferences({
  assigned_to_user_id: { table: 'member' },
  deal_id: { table: 'deals' },
  contact_id: { table: 'contacts' },
  company_id: { table: 'companies' }
})

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
  const type = await context.app.get('knex')('activity_types')
    .select('id', 'name')
    .where({ organization_id: await targetOrganization(context) })
    .whereRaw('lower(name) = ?', [requested])
    .whereNull('deleted_at')
    .first()
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
  if (sameDay && start_time && end_time && end_time < start_time) {
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
  if (context.method === 'create' || 'location' in data) context.service.geocodeLater(activity)
}

/** Lists take filters; calls by id and the bulk completion take only organization_id. */
const validateQuery: Hook = async (context) => {
  const validator = context.method === 'find' ? activityQueryValidator : activityIdQueryValidator
  await schemaHooks.validateQuery(validator)(context as any)
}

/** PATCH /activities without an id takes {ids, done} and nothing else. */
const validateCompletion = schemaHooks.validateData(activityCompletionValidator) as Hook

/** The rules a written activity obeys, after its body is validated and resolved. */
const activityRules: Hook[] = [references as Hook, resolveActivityType, checkSchedule, prepareLocation]

const patchOne: Hook[] = [
  schemaHooks.validateData(activityPatchValidator) as Hook,
  schemaHooks.resolveData(activityPatchResolver) as Hook,
  ...activityRules
]

/** One activity by id, or the bulk completion when the id is null. */
const beforePatch = async (context: ActivityContext) => {
  for (const hook of context.id === null ? [validateCompletion] : patchOne) await hook(context)
  return context
}

export const activity = (app: Application) => {
  app.use(activityPath, new ActivityService(getOptions(app)), {
    methods: activityMethods,
    events: [],
    docs: {
      description: 'Activities (calls, meetings, tasks, deadlines, e-mails, lunches and custom types) of an organization.',
      schemas: {
        result: activitySchema, data: activityDataSchema, patch: activityPatchSchema, query: activityQuerySchema,
        multiPatch: {
          data: activityCompletionSchema,
          result: activityCompletionResultSchema,
          description: 'Sets done on many activities in one statement; ids outside your organization or deleted are left out of the answer.'
        }
      }
    }
  } as any)
  app.service(activityPath).hooks({
    around: {
      all: [authenticated]
    },
    before: {
      all: [validateQuery, scopeToTenant()],
      create: [schemaHooks.validateData(activityDataValidator), schemaHooks.resolveData(activityDataResolver), ...activityRules],
      patch: [beforePatch]
    },
    after: {
      create: [geocodeAfterWrite],
      patch: [geocodeAfterWrite]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [activityPath]: ActivityService
  }
}
