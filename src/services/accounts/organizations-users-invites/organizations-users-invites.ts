import { BadRequest, Forbidden, NotFound } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { FORBIDDEN_MESSAGE, accessibleOrganizations, targetOrganization } from '../../../hooks/tenant-scope.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { mail } from '../../../mail/index.js'
import { INVITATION_JOINS, InvitationService, getOptions } from './organizations-users-invites.class.js'
import type { InvitationData } from './organizations-users-invites.class.js'
import {
  invitationAcceptSchema, invitationAcceptValidator, invitationDataResolver, invitationDataSchema,
  invitationDataValidator, invitationQuerySchema, invitationQueryValidator,
  invitationSchema
} from './organizations-users-invites.schema.js'
import { invitationMethods, invitationPath } from './organizations-users-invites.shared.js'
import { databaseOf } from '../../../db.js'

export * from './organizations-users-invites.class.js'
export * from './organizations-users-invites.schema.js'

type InvitationContext = HookContext<InvitationService>

/** GET with exactly one filter, the token: the invitee looking their invitation up. */
const isTokenLookup = (context: InvitationContext) => {
  const keys = Object.keys(context.params.query ?? {})
  return context.method === 'find' && keys.length === 1 && keys[0] === 'token'
}

const isAcceptance = (context: InvitationContext) => context.method === 'patch' && context.id !== null

const isAnonymous = (context: InvitationContext) => {
  const { provider, authentication, caller } = context.params
  return Boolean(provider && !authentication && !caller)
}

/**
 * The two calls where the token is the credential: the token lookup (GET with the token as the
 * only filter) and the acceptance. Both work without credentials; without them, a list with the
 * token and anything else is refused rather than answered 401.
 */
const isTokenCall = (context: InvitationContext) => {
  if (isTokenLookup(context) || isAcceptance(context)) return true
  if (isAnonymous(context) && context.method === 'find' && context.params.query?.token !== undefined) {
    throw new BadRequest('Without credentials, the token is the only filter allowed', { errors: { token: 'must be the only filter' } })
  }
  return false
}

/**
 * The scope of the token calls: the lookup is not scoped (the token is the filter), and an
 * acceptance with credentials must come from the invited user (anyone else: 404 outside their
 * organizations, 403 inside).
 */
const tokenScope = async (context: InvitationContext) => {
  if (isAcceptance(context)) await acceptingCallerIsInvitee(context)
}

async function acceptingCallerIsInvitee(context: InvitationContext) {
  const { caller, user } = context.params
  if (!caller || context.params.system) return context
  const notFound = new NotFound(`No record found for id '${context.id}'`)
  if (!/^\d{1,9}$/.test(String(context.id))) throw notFound
  const invitation = await databaseOf(context.params, context.app.get('knex'))('organizations_users_invites')
    .where({ id: Number(context.id) })
    .whereNull('deleted_at')
    .first('organization_id', 'email')
  if (!invitation) throw notFound
  if (invitation.email === user?.email.toLowerCase()) return context
  if (accessibleOrganizations(caller).includes(invitation.organization_id)) throw new Forbidden(FORBIDDEN_MESSAGE)
  throw notFound
}

/**
 * An API key invites members only: an owner or admin invitation hands its token to whoever holds
 * the key, and accepting it makes an account with a person's full powers. Administrators are
 * invited by a person, signed in.
 */
const apiKeyInvitesMembers = async (context: InvitationContext) => {
  if (context.params.caller?.apiKeyId !== undefined && (context.data as InvitationData).role !== 'member') {
    throw new Forbidden('An API key may invite members only: inviting an owner or an admin needs a person signed in (a bearer JWT)')
  }
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
  tenantResource(app, {
    path: invitationPath,
    // The token lookup and the acceptance work without credentials too (isTokenCall).
    docs: { noun: { one: 'invitation' }, access: { find: { credentials: 'optional' }, patch: { credentials: 'optional' } } },
    service: new InvitationService(getOptions(app)),
    methods: invitationMethods,
    description:
      'Invitations to join an organization (owners and admins). The invitee looks the invitation up with GET and only ' +
      'the token filter (no credentials), and accepts it with PATCH {status: "accepted", token}: signed in as the invited ' +
      'address\'s account, or without credentials, with a password, when the address has no account. See docs/invitations.md.',
    schemas: { result: invitationSchema, data: invitationDataSchema, patch: invitationAcceptSchema, query: invitationQuerySchema },
    validators: { query: invitationQueryValidator, data: invitationDataValidator, patch: invitationAcceptValidator },
    resolvers: { data: invitationDataResolver },
    hidden: ['token_hash'],
    // A pending invitation past its expiry reads as expired (as invitationResolver says for written ones).
    computed: { status: `CASE WHEN p.status = 'pending' AND p.expires_at <= now() THEN 'expired' ELSE p.status END` },
    joins: { list: INVITATION_JOINS, record: INVITATION_JOINS },
    roles: { all: ['owner', 'admin'] },
    secretFields: ['token'],
    // Accepting joins the key's user to another organization: people only.
    refuseApiKeys: ['patch'],
    tokenCalls: { matches: isTokenCall, scope: tokenScope },
    rules: { create: [apiKeyInvitesMembers, ownerInvitesOwner] }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [invitationPath]: InvitationService
  }
}
