import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Validator } from '@feathersjs/schema'
import { StringEnum, Type } from '@feathersjs/typebox'
import { dataValidator, getValidator } from './validators.js'
import { userSchema } from './services/accounts/users/users.schema.js'

/**
 * The bodies of `create` on authentication (POST /authentication, or a socket's sign-in), one per
 * strategy. Each field is a bounded string, so that a value of another type is a 400 naming it
 * before any strategy reads it (a password that is no string would reach bcrypt).
 */
export const localLoginSchema = Type.Object(
  {
    strategy: Type.Literal('local'),
    // No e-mail format: the login ignores case and surrounding spaces, and an unknown address is a 401.
    email: Type.String({ maxLength: 320, description: "the account's e-mail address (case and surrounding spaces ignored)" }),
    password: Type.String({ maxLength: userSchema.properties.password.maxLength })
  },
  { $id: 'LocalLogin', additionalProperties: false }
)

export const jwtLoginSchema = Type.Object(
  {
    strategy: Type.Literal('jwt'),
    accessToken: Type.String({ maxLength: 4096, description: 'a JWT this service issued' })
  },
  { $id: 'JwtLogin', additionalProperties: false }
)

/** Over Socket.io only: REST sends the key with every request instead (401 here). */
export const apiKeyLoginSchema = Type.Object(
  {
    strategy: Type.Literal('api-key'),
    apiKey: Type.String({ maxLength: 200 })
  },
  { $id: 'ApiKeyLogin', additionalProperties: false }
)

const validatorsByStrategy = new Map<unknown, Validator>([
  ['local', getValidator(localLoginSchema, dataValidator)],
  ['jwt', getValidator(jwtLoginSchema, dataValidator)],
  ['api-key', getValidator(apiKeyLoginSchema, dataValidator)]
])
const knownStrategy = getValidator(Type.Object({ strategy: StringEnum([...validatorsByStrategy.keys()] as string[]) }), dataValidator)

/** Validates a login body against its strategy's schema; without a known strategy, 400 naming `strategy`. */
export const validateLogin = schemaHooks.validateData((data: any) => (validatorsByStrategy.get(data?.strategy) ?? knownStrategy)(data))
