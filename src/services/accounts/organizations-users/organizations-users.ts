import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { MembershipService, USER_JOIN, getOptions } from './organizations-users.class.js'
import {
  membershipPatchSchema, membershipPatchValidator, membershipQuerySchema,
  membershipQueryValidator, membershipSchema
} from './organizations-users.schema.js'
import { membershipMethods, membershipPath } from './organizations-users.shared.js'

export * from './organizations-users.class.js'
export * from './organizations-users.schema.js'

export const organizationUser = (app: Application) =>
  tenantResource(app, {
    path: membershipPath,
    docs: { noun: { one: 'membership' } },
    service: new MembershipService(getOptions(app)),
    methods: membershipMethods,
    description: 'Members of an organization with their role. Changing or removing a member needs an owner or admin; only owners grant or revoke ownership; the last owner stays.',
    schemas: { result: membershipSchema, patch: membershipPatchSchema, query: membershipQuerySchema },
    validators: { query: membershipQueryValidator, patch: membershipPatchValidator },
    roles: { patch: ['owner', 'admin'], remove: ['owner', 'admin'] },
    // Roles and memberships are administered by people: a key that could raise a role would make owners.
    refuseApiKeys: ['patch', 'remove'],
    joins: { list: USER_JOIN, record: USER_JOIN }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [membershipPath]: MembershipService
  }
}
