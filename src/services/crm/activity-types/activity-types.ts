import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ACTIVITIES_COUNT, ActivityTypeService, getOptions } from './activity-types.class.js'
import {
  BUILT_IN_ACTIVITY_TYPES, activityTypeDataSchema, activityTypeDataValidator, activityTypePatchSchema,
  activityTypePatchValidator, activityTypeQuerySchema, activityTypeQueryValidator, activityTypeSchema
} from './activity-types.schema.js'
import { activityTypeMethods, activityTypePath } from './activity-types.shared.js'

export * from './activity-types.class.js'
export * from './activity-types.schema.js'

/**
 * Names are stored trimmed, and a custom type may not be named like a built-in one: that would
 * make activity_type ambiguous.
 */
const normalizeName = async (context: HookContext<ActivityTypeService>) => {
  const data = context.data as { name?: string }
  if (data.name === undefined) return context
  data.name = data.name.trim()
  if ((BUILT_IN_ACTIVITY_TYPES as readonly string[]).includes(data.name.toLowerCase())) {
    throw new BadRequest('Validation failed', { errors: { name: 'is the name of a built-in activity type' } })
  }
  return context
}

export const activityType = (app: Application) =>
  tenantResource(app, {
    path: activityTypePath,
    service: new ActivityTypeService(getOptions(app)),
    methods: activityTypeMethods,
    description: 'Custom activity types of an organization, next to the built-in call, meeting, task, deadline, email and lunch.',
    schemas: { result: activityTypeSchema, data: activityTypeDataSchema, patch: activityTypePatchSchema, query: activityTypeQuerySchema },
    validators: { query: activityTypeQueryValidator, data: activityTypeDataValidator, patch: activityTypePatchValidator },
    rules: { create: [normalizeName], patch: [normalizeName] },
    joins: { record: ACTIVITIES_COUNT }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [activityTypePath]: ActivityTypeService
  }
}
