import { resolve } from '@feathersjs/schema'
import { Type, StringEnum } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { Role } from '../organizations-users/organizations-users.schema.js'

/**
 * Stored statuses are 'pending' and 'accepted'. 'expired' is how a pending invitation past its
 * expires_at reads: computed on every read, never stored, so it needs no job to keep it true.
 */
export const InvitationStatus = StringEnum(['pending', 'accepted', 'expired'])

const Email = Type.String({ format: 'email', maxLength: 254 })

export const invitationSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    email: Email,
    role: Role,
    status: InvitationStatus,
    token: Type.Optional(
      Type.String({ description: 'single-use acceptance token (256 random bits, base64url); returned once, by create, and mailed' })
    ),
    token_hash: Type.Optional(Type.String({ description: 'internal: SHA-256 of the token, never returned' })),
    expires_at: Timestamp,
    created_by_user_id: Nullable(RecordId),
    accepted_by_user_id: Nullable(RecordId),
    accepted_at: Nullable(Timestamp),
    ...softDeleteTimestamps,
    organization: Type.Optional(Nullable(Type.Object({ id: RecordId, name: Type.String() }))),
    created_by_user: Type.Optional(
      Nullable(
        Type.Object({ id: RecordId, email: Type.String(), first_name: Nullable(Type.String()), last_name: Nullable(Type.String()) })
      )
    )
  },
  { $id: 'OrganizationInvitation', additionalProperties: false }
)
export type Invitation = Static<typeof invitationSchema>


export const invitationDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    email: Email,
    role: Role
  },
  { $id: 'OrganizationInvitationData', additionalProperties: false }
)
export type InvitationData = Static<typeof invitationDataSchema>
export const invitationDataValidator = getValidator(invitationDataSchema, dataValidator)
export const invitationDataResolver = resolve<InvitationData, HookContext>({
  email: async (value) => value?.trim().toLowerCase()
})

/**
 * PATCH accepts the invitation: the only change an invitation allows. Signed in (the invitee's
 * JWT), the names and the password are not used.
 */
export const invitationAcceptSchema = Type.Object(
  {
    status: Type.Literal('accepted'),
    token: Type.String({ minLength: 1, maxLength: 200 }),
    first_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    last_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    password: Type.Optional(
      Type.String({ minLength: 8, maxLength: 200, description: 'without credentials: the password of the account created for an address that has none' })
    )
  },
  { $id: 'OrganizationInvitationAccept', additionalProperties: false }
)
export type InvitationAccept = Static<typeof invitationAcceptSchema>
export const invitationAcceptValidator = getValidator(invitationAcceptSchema, dataValidator)

export const invitationQuerySchema = Type.Object(
  {
    ...listQuery(invitationSchema, ['organization_id', 'role', 'created_by_user_id', 'expires_at', 'created_at', 'updated_at']).properties,
    status: Type.Optional(InvitationStatus),
    email: Type.Optional(Type.String({ maxLength: 254, description: 'exact address, case-insensitive' })),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 }))
  },
  { $id: 'OrganizationInvitationQuery', additionalProperties: false }
)
export type InvitationQuery = Static<typeof invitationQuerySchema>
export const invitationQueryValidator = getValidator(invitationQuerySchema, queryValidator)
