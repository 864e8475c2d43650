import { BadRequest } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { ActivityTypeService, getOptions } from './activity-types.class.js'
import {
  BUILT_IN_ACTIVITY_TYPES, activityTypeDataSchema, activityTypeDataValidator, activityTypePatchSchema,
  activityTypeIdQueryValidator, activityTypePatchValidator, activityTypeQuerySchema, activityTypeQueryValidator, activityTypeSchema
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

/** Lists take filters; calls by id take only organization_id. */
const validateQuery = async (context: HookContext<ActivityTypeService>) => {
  const validator = context.method === 'find' ? activityTypeQueryValidator : activityTypeIdQueryValidator
  return schemaHooks.validateQuery(validator)(context as any)
}

export const activityType = (app: Application) => {
  app.use(activityTypePath, new ActivityTypeService(getOptions(app)), {
    methods: activityTypeMethods,
    events: [],
    docs: {
      description: 'Custom activity types of an organization, next to the built-in call, meeting, task, deadline, email and lunch.',
      schemas: {
        result: activityTypeSchema, data: activityTypeDataSchema, patch: activityTypePatchSchema,
        query: activityTypeQuerySchema
      }
    }
  } as any)
  app.service(activityTypePath).hooks({
    around: {
      all: [authenticated]
    },
    before: {
      all: [validateQuery, scopeToTenant()],
      create: [schemaHooks.validateData(activityTypeDataValidator), normalizeName],
      patch: [schemaHooks.validateData(activityTypePatchValidator), normalizeName]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [activityTypePath]: ActivityTypeService
  }
}
