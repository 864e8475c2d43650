import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { passwordHash } from '@feathersjs/authentication-local'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, timestamps } from '../../../schemas.js'

export const userSchema = Type.Object(
  {
    id: RecordId,
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 8, maxLength: 200 }),
    first_name: Nullable(Type.String({ maxLength: 200 })),
    last_name: Nullable(Type.String({ maxLength: 200 })),
    /** When the address was proven (verification link or invitation); null: unverified. */
    email_verified_at: Nullable(Timestamp),
    /** Internal, never returned: JWTs issued before it are refused. */
    sessions_valid_after: Type.Optional(Nullable(Timestamp)),
    ...timestamps
  },
  { $id: 'User', additionalProperties: false }
)
export type User = Static<typeof userSchema>

export const userPublicSchema = Type.Omit(userSchema, ['password', 'sessions_valid_after'], { $id: 'UserPublic' })


export const userDataSchema = Type.Object(
  {
    email: userSchema.properties.email,
    password: userSchema.properties.password,
    first_name: Type.Optional(userSchema.properties.first_name),
    last_name: Type.Optional(userSchema.properties.last_name)
  },
  { $id: 'UserData', additionalProperties: false }
)
export type UserData = Static<typeof userDataSchema>
export const userDataValidator = getValidator(userDataSchema, dataValidator)
export const userDataResolver = resolve<User, HookContext>({
  email: async (value) => value?.trim().toLowerCase(),
  password: passwordHash({ strategy: 'local' })
})

export const userPatchSchema = Type.Partial(
  Type.Object({
    ...userDataSchema.properties,
    current_password: Type.String({
      maxLength: 200,
      description: 'required to change password or email (checked, never stored); the change ends every earlier session'
    })
  }),
  { $id: 'UserPatch', additionalProperties: false }
)
export type UserPatch = Static<typeof userPatchSchema>
export const userPatchValidator = getValidator(userPatchSchema, dataValidator)
export const userPatchResolver = resolve<User, HookContext>({
  email: async (value) => value?.trim().toLowerCase(),
  password: passwordHash({ strategy: 'local' })
})

export const userQuerySchema = Type.Object(
  { id: Type.Optional(RecordId), email: Type.Optional(Type.String()), $limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1 })) },
  { $id: 'UserQuery', additionalProperties: false }
)
export type UserQuery = Static<typeof userQuerySchema>
export const userQueryValidator = getValidator(userQuerySchema, queryValidator)

/** POST /users with X-Service-Method: verifyEmail — the token from the verification link. */
export const emailVerificationSchema = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { $id: 'EmailVerification', additionalProperties: false }
)
export type EmailVerification = Static<typeof emailVerificationSchema>
export const emailVerificationValidator = getValidator(emailVerificationSchema, dataValidator)

/** POST /users with X-Service-Method: request-password-reset — the address to send a reset link to. */
export const passwordResetRequestSchema = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }) },
  { $id: 'PasswordResetRequest', additionalProperties: false }
)
export type PasswordResetRequest = Static<typeof passwordResetRequestSchema>
export const passwordResetRequestValidator = getValidator(passwordResetRequestSchema, dataValidator)

/** The answer to a reset request: the same whether or not the address has an account. */
export const passwordResetRequestedSchema = Type.Object(
  { message: Type.String() },
  { $id: 'PasswordResetRequested', additionalProperties: false }
)

/** POST /users with X-Service-Method: reset-password — the token from the reset link and the new password. */
export const passwordResetSchema = Type.Object(
  { token: emailVerificationSchema.properties.token, password: userSchema.properties.password },
  { $id: 'PasswordReset', additionalProperties: false }
)
export type PasswordReset = Static<typeof passwordResetSchema>
export const passwordResetValidator = getValidator(passwordResetSchema, dataValidator)
