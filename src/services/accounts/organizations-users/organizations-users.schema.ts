import { Type, StringEnum } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { RecordId, listQuery, timestamps } from '../../../schemas.js'

export const Role = StringEnum(['owner', 'admin', 'member'])

export const membershipSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    user_id: RecordId,
    role: Role,
    ...timestamps,
    user: Type.Optional(
      Type.Object({ id: RecordId, first_name: Type.Any(), last_name: Type.Any(), email: Type.String() })
    )
  },
  { $id: 'OrganizationUser', additionalProperties: false }
)
export type Membership = Static<typeof membershipSchema>

export const membershipPatchSchema = Type.Object({ role: Role }, { $id: 'OrganizationUserPatch', additionalProperties: false })
export type MembershipPatch = Static<typeof membershipPatchSchema>
export const membershipPatchValidator = getValidator(membershipPatchSchema, dataValidator)

export const membershipQuerySchema = Type.Object(
  { ...listQuery(membershipSchema, ['organization_id', 'user_id', 'role']).properties },
  { $id: 'OrganizationUserQuery', additionalProperties: false }
)
export type MembershipQuery = Static<typeof membershipQuerySchema>
export const membershipQueryValidator = getValidator(membershipQuerySchema, queryValidator)
