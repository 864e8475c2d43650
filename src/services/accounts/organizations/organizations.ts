import { hooks as schemaHooks } from '@feathersjs/schema'
import { Forbidden, NotAuthenticated } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { authenticated } from '../../../hooks/authenticate.js'
import { refuseApiKeyCallers } from '../../../hooks/api-key-callers.js'
import { checkTimeZone } from '../../../hooks/time-zone.js'
import { filtersOnListOnly } from '../../../validators.js'
import { FORBIDDEN_MESSAGE, accessibleOrganizations } from '../../../hooks/tenant-scope.js'
import { OrganizationService, getOptions } from './organizations.class.js'
import {
  organizationDataSchema, organizationDataValidator,
  organizationPatchSchema, organizationPatchValidator, organizationQuerySchema, organizationQueryValidator,
  organizationSchema
} from './organizations.schema.js'
import { organizationMethods, organizationPath } from './organizations.shared.js'

export * from './organizations.class.js'
export * from './organizations.schema.js'

/**
 * An organization is the tenant itself, so its scope is its own id: reads see the caller's
 * organizations, changes need an owner or admin of that organization.
 */
const scopeToOwnOrganizations = async (context: HookContext<OrganizationService>) => {
  if (context.params.system) return context
  const caller = context.params.caller
  if (!caller) throw new NotAuthenticated('Invalid API key')
  if (context.method === 'create') return context
  context.params.query = { ...context.params.query, id: { $in: accessibleOrganizations(caller) } } as any
  if (context.method === 'patch') {
    await context.service.storedRow(context.id!, context.params as any)
    const role = caller.roles.get(Number(context.id))
    if (role !== 'owner' && role !== 'admin') throw new Forbidden(FORBIDDEN_MESSAGE)
  }
  return context
}

/** A new organization keeps deleted records for the server's default retention unless it says otherwise. */
const defaultRetention = async (context: HookContext<OrganizationService>) => {
  const data = context.data as Record<string, unknown>
  data.deleted_retention_days ??= context.app.get('deletedRetentionDays')
}

/** How long deleted records are kept decides when they are gone for good: an owner's decision, not an admin's. */
const ownersSetRetention = async (context: HookContext<OrganizationService>) => {
  if ((context.data as Record<string, unknown>).deleted_retention_days === undefined || context.params.system) return
  if (context.params.caller?.roles.get(Number(context.id)) !== 'owner') throw new Forbidden(FORBIDDEN_MESSAGE)
}

export const organization = (app: Application) => {
  app.use(organizationPath, new OrganizationService(getOptions(app)), {
    methods: organizationMethods,
    events: [],
    docs: {
      description: 'Organizations (tenants). Creating one makes the caller its owner; requires a bearer JWT.',
      schemas: { result: organizationSchema, data: organizationDataSchema, patch: organizationPatchSchema, query: organizationQuerySchema }
    }
  } as any)
  app.service(organizationPath).hooks({
    around: {
      all: [authenticated],
      create: [refuseApiKeyCallers],
      patch: [refuseApiKeyCallers]
    },
    before: {
      all: [filtersOnListOnly(organizationQueryValidator), scopeToOwnOrganizations],
      create: [schemaHooks.validateData(organizationDataValidator), checkTimeZone, defaultRetention],
      patch: [schemaHooks.validateData(organizationPatchValidator), checkTimeZone, ownersSetRetention]
    }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [organizationPath]: OrganizationService
  }
}
