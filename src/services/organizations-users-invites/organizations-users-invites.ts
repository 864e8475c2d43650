import { BadRequest, Forbidden, NotFound } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext, NextFunction } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { refuseApiKeyCallers } from '../../hooks/api-key-callers.js'
import { FORBIDDEN_MESSAGE, accessibleOrganizations, scopeToTenant, targetOrganization } from '../../hooks/tenant-scope.js'
import { mail } from '../../mail/index.js'
import { InvitationService, getOptions } from './organizations-users-invites.class.js'
import {
  invitationAcceptSchema, invitationAcceptValidator, invitationDataResolver, invitationDataSchema,
  invitationDataValidator, invitationExternalResolver, invitationQuerySchema, invitationQueryValidator,
  invitationResolver, invitationSchema
} from './organizations-users-invites.schema.js'
import { invitationMethods, invitationPath } from './organizations-users-invites.shared.js'

export * from './organizations-users-invites.class.js'
export * from './organizations-users-invites.schema.js'

type InvitationContext = HookContext<InvitationService>

/** GET with exactly one filter, the token: the invitee looking their invitation up. */
const isTokenLookup = (context: InvitationContext) => {
  const keys = Object.keys(context.params.query ?? {})
  return context.method === 'find' && keys.length === 1 && keys[0] === 'token'
}

const isAcceptance = (context: InvitationContext) => context.method === 'patch'

const isAnonymous = (context: InvitationContext) => {
  const { provider, authentication, caller } = context.params
  return Boolean(provider && !authentication && !caller)
}

/**
 * The two calls where the token is the credential (the token lookup and the acceptance) are
 * allowed without credentials; every other call authenticates as everywhere else. Credentials,
 * when sent, are always checked.
 */
const authenticatedOrToken = async (context: InvitationContext, next: NextFunction) => {
  if (isAnonymous(context)) {
    if (isTokenLookup(context) || isAcceptance(context)) return next()
    if (context.method === 'find' && context.params.query?.token !== undefined) {
      throw new BadRequest('Without credentials, the token is the only filter allowed', { errors: { token: 'must be the only filter' } })
    }
  }
  return authenticated(context, next)
}

const ownersAndAdmins = scopeToTenant({ roles: { all: ['owner', 'admin'] } })

/**
 * Every call is scoped to the caller's organizations with the owner or admin role, except the
 * token calls: the token lookup is not scoped (the token is the filter), and an acceptance with
 * credentials must come from the invited user (anyone else: 404 outside their organizations,
 * 403 inside).
 */
const scopeUnlessToken = async (context: InvitationContext) => {
  if (isTokenLookup(context)) return context
  if (isAcceptance(context)) return acceptingCallerIsInvitee(context)
  return ownersAndAdmins(context)
}

async function acceptingCallerIsInvitee(context: InvitationContext) {
  const { caller, user } = context.params
  if (!caller || context.params.system) return context
  const notFound = new NotFound(`No record found for id '${context.id}'`)
  if (!/^\d{1,9}$/.test(String(context.id))) throw notFound
  const invitation = await context.app.get('knex')('organizations_users_invites')
    .where({ id: Number(context.id) })
    .whereNull('deleted_at')
    .first('organization_id', 'email')
  if (!invitation) throw notFound
  if (invitation.email === user?.email.toLowerCase()) return context
  if (accessibleOrganizations(caller).includes(invitation.organization_id)) throw new Forbidden(FORBIDDEN_MESSAGE)
  throw notFound
}

/** Only an owner may invite an owner. */
const ownerInvitesOwner = async (context: InvitationContext) => {
  const data = context.data as { role?: string }
  const caller = context.params.caller
  if (data.role !== 'owner' || !caller) return context
  if (caller.roles.get(await targetOrganization(context)) !== 'owner') throw new Forbidden('Only an owner may invite an owner')
  return context
}

export const invitation = (app: Application) => {
  app.configure(mail)
  app.use(invitationPath, new InvitationService(getOptions(app)), {
    methods: invitationMethods,
    events: [],
    docs: {
      description:
        'Invitations to join an organization (owners and admins). The invitee looks the invitation up with GET and only ' +
        'the token filter, and accepts it with PATCH {status: "accepted", token}; both work without credentials. See docs/invitations.md.',
      schemas: { result: invitationSchema, data: invitationDataSchema, patch: invitationAcceptSchema, query: invitationQuerySchema }
    }
  } as any)
  app.service(invitationPath).hooks({
    around: {
      all: [
        authenticatedOrToken,
        schemaHooks.resolveExternal(invitationExternalResolver),
        schemaHooks.resolveResult(invitationResolver)
      ],
      patch: [refuseApiKeyCallers]
    },
    before: {
      all: [schemaHooks.validateQuery(invitationQueryValidator), scopeUnlessToken],
      create: [schemaHooks.validateData(invitationDataValidator), ownerInvitesOwner, schemaHooks.resolveData(invitationDataResolver)],
      patch: [schemaHooks.validateData(invitationAcceptValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [invitationPath]: InvitationService
  }
}
