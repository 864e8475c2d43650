import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { MembershipService, getOptions } from './organizations-users.class.js'
import {
  membershipExternalResolver, membershipPatchSchema, membershipPatchValidator, membershipQuerySchema,
  membershipQueryValidator, membershipResolver, membershipSchema
} from './organizations-users.schema.js'
import { membershipMethods, membershipPath } from './organizations-users.shared.js'

export * from './organizations-users.class.js'
export * from './organizations-users.schema.js'

export const organizationUser = (app: Application) => {
  app.use(membershipPath, new MembershipService(getOptions(app)), {
    methods: membershipMethods,
    events: [],
    docs: {
      description: 'Members of an organization with their role. Changing or removing a member needs an owner or admin; only owners grant or revoke ownership; the last owner stays.',
      schemas: { result: membershipSchema, patch: membershipPatchSchema, query: membershipQuerySchema }
    }
  } as any)
  app.service(membershipPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveExternal(membershipExternalResolver), schemaHooks.resolveResult(membershipResolver)]
    },
    before: {
      all: [
        schemaHooks.validateQuery(membershipQueryValidator),
        scopeToTenant({ roles: { patch: ['owner', 'admin'], remove: ['owner', 'admin'] } })
      ],
      patch: [schemaHooks.validateData(membershipPatchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [membershipPath]: MembershipService
  }
}
