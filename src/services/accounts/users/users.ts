import { Forbidden, NotFound } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../../declarations.js'
import { authenticated } from '../../../hooks/authenticate.js'
import { refuseApiKeyCallers } from '../../../hooks/api-key-callers.js'
import { UserService, getOptions } from './users.class.js'
import {
  userDataResolver, userDataValidator, userPatchResolver, userPatchValidator,
  userQueryValidator, userDataSchema, userPatchSchema, userPublicSchema, userQuerySchema,
  emailVerificationSchema, emailVerificationValidator,
  passwordResetRequestSchema, passwordResetRequestValidator, passwordResetRequestedSchema, passwordResetSchema, passwordResetValidator
} from './users.schema.js'
import { throttlePasswordResetRedemptions, throttlePasswordResetRequests } from '../../../rate-limit/login-throttle.js'
import { mail } from '../../../mail/index.js'
import { filtersOnListOnly } from '../../../validators.js'
import { userMethods, userPath } from './users.shared.js'

export * from './users.class.js'
export * from './users.schema.js'

/** An external caller reads and changes only their own account; others simply do not exist. */
const onlySelf = async (context: HookContext<UserService>) => {
  const { provider, caller } = context.params
  if (!provider) return context
  if (context.id !== undefined && context.id !== null) {
    if (Number(context.id) !== caller?.userId) throw new NotFound(`No record found for id '${context.id}'`)
  } else {
    context.params.query = { ...context.params.query, id: caller!.userId }
  }
  return context
}

/**
 * The login flow re-reads the account it just verified, with the request's provider and the
 * user in params; that read is the user looking at themselves and needs no other credentials.
 */
const authenticatedOrLoginRead = async (context: HookContext<UserService>, next: () => Promise<void>) => {
  const { user, authentication, provider } = context.params
  if (provider && user && !authentication && context.method === 'get' && Number(context.id) === user.id) {
    context.params.caller ??= { userId: user.id, roles: new Map() }
    return next()
  }
  return authenticated(context, next)
}

/** A reset request is taken, not done: its mail leaves through the outbox, if at all. */
const answerAccepted = async (context: HookContext<UserService>, next: () => Promise<void>) => {
  await next()
  context.http = { ...context.http, status: 202 }
}

const signupOpen = async (context: HookContext<UserService>) => {
  if (context.params.provider && !context.app.get('signupEnabled')) {
    throw new Forbidden('Public sign-up is disabled on this server')
  }
}

export const user = (app: Application) => {
  app.configure(mail)
  app.use(userPath, new UserService(getOptions(app)), {
    methods: userMethods,
    events: [],
    docs: {
      noun: { one: 'user' },
      description:
        'Accounts. Sign-up is public and mails a verification link; afterwards a user reads and changes only their own ' +
        'account (password and email changes need current_password). verifyEmail (no credentials) redeems the link\'s token. ' +
        'request-password-reset and reset-password (no credentials) are the way back into an account whose password is lost.',
      access: {
        create: { credentials: 'none', errors: { 403: 'Public sign-up is switched off on this server (SIGNUP_ENABLED=false)' } },
        verifyEmail: { credentials: 'none' },
        'request-password-reset': { credentials: 'none' },
        'reset-password': { credentials: 'none' }
      },
      schemas: {
        result: userPublicSchema, data: userDataSchema, patch: userPatchSchema, query: userQuerySchema,
        verifyEmail: { data: emailVerificationSchema, result: userPublicSchema, summary: 'Verify an e-mail address with the token of its link (no credentials)' },
        'request-password-reset': {
          data: passwordResetRequestSchema, result: passwordResetRequestedSchema, status: 202,
          summary: 'Ask for a password reset link (no credentials)',
          description: 'Answers 202 whether or not the address has an account; when it has, a single-use link (APP_URL + PASSWORD_RESET_LINK_PATH, valid PASSWORD_RESET_TTL_SECONDS) is mailed to it. Limited like the login, per e-mail and per client address (429).'
        },
        'reset-password': {
          data: passwordResetSchema, result: userPublicSchema,
          summary: 'Choose a new password with the token of a reset link (no credentials)',
          description: 'Sets the password, marks the address verified and ends every earlier session of the account (its JWTs get 401, its sockets are disconnected). A used, expired or unknown token is a 400 (errors.token). Failed attempts count against the client address like failed logins (429).'
        }
      }
    }
  } as any)
  app.service(userPath).hooks({
    around: {
      find: [authenticated],
      get: [authenticatedOrLoginRead],
      patch: [authenticated, refuseApiKeyCallers],
      // Validated first: a malformed request spends no budget.
      'request-password-reset': [schemaHooks.validateData(passwordResetRequestValidator), throttlePasswordResetRequests, answerAccepted],
      'reset-password': [schemaHooks.validateData(passwordResetValidator), throttlePasswordResetRedemptions]
    },
    before: {
      all: [filtersOnListOnly(userQueryValidator)],
      find: [onlySelf],
      get: [onlySelf],
      create: [signupOpen, schemaHooks.validateData(userDataValidator), schemaHooks.resolveData(userDataResolver)],
      patch: [onlySelf, schemaHooks.validateData(userPatchValidator), schemaHooks.resolveData(userPatchResolver)],
      verifyEmail: [schemaHooks.validateData(emailVerificationValidator)]
    }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [userPath]: UserService
  }
}
