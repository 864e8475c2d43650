import { BadRequest, Forbidden, MethodNotAllowed } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import { emitAfterCommit } from '../../../hooks/deferred-events.js'
import type { Application } from '../../../declarations.js'
import { enqueueMail, tokenLink } from '../../../mail/index.js'
import { FORBIDDEN_MESSAGE } from '../../../hooks/tenant-scope.js'
import { hashToken, newToken } from '../../../authentication.js'
import type { UserParams } from '../users/users.class.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Relation } from '../../../engine/read-model.js'
import type { Invitation, InvitationAccept, InvitationData, InvitationQuery } from './organizations-users-invites.schema.js'
import { databaseOf } from '../../../db.js'

export type { Invitation, InvitationAccept, InvitationData, InvitationQuery }
export type InvitationParams = KnexAdapterParams<InvitationQuery>

const TABLE = 'organizations_users_invites'

export const INVALID_TOKEN_MESSAGE = 'The invitation token is invalid, has already been used or has expired'

export const INVITATION_JOINS: Relation[] = [
  { from: 'organization_id', as: 'organization', table: 'organizations', columns: ['id', 'name'], tenant: false },
  { from: 'created_by_user_id', as: 'created_by_user', table: 'users', columns: ['id', 'email', 'first_name', 'last_name'], tenant: false }
]

const invalidToken = () => new BadRequest(INVALID_TOKEN_MESSAGE, { errors: { token: 'is invalid or has expired' } })

/**
 * The one answer to an acceptance without credentials that creates no account: no password sent,
 * or the address has an account, verified or not. The same answer in every case, so that it does
 * not tell whether the address has an account or whether that account is verified.
 */
const signInOrSetPassword = () =>
  new BadRequest("To accept, sign in with the invited address's account, or set a password if you do not have one", {
    errors: { password: 'is needed to accept without signing in, and creates the account of an address that has none' }
  })

export interface InvitationServiceOptions {
  paginate: any
  Model: Knex
  name: string
  app: Application
}

/**
 * Invitations to join an organization. Creating one writes the invitation and its e-mail (to
 * the outbox) in one transaction; accepting one locks it, creates the account if needed and
 * grants the membership in one transaction, so a token is used at most once.
 *
 * The token is stored as its SHA-256 hash only: the plain token is in the create answer (to the
 * inviter) and in the e-mail, and lookups and acceptances hash what they are given.
 */
export class InvitationService extends RecordService<Invitation, InvitationData, InvitationParams, InvitationAccept> {
  private app: Application

  constructor(options: InvitationServiceOptions) {
    super(options)
    this.app = options.app
  }

  async find(params: InvitationParams = {}): Promise<any> {
    const { status, email, token, ...query } = (params.query ?? {}) as Record<string, any>
    const builder = this.createQuery({ ...params, query } as InvitationParams)
    if (token !== undefined) builder.where(`${TABLE}.token_hash`, hashToken(String(token)))
    if (email !== undefined) builder.where(`${TABLE}.email`, String(email).trim().toLowerCase())
    if (status === 'accepted') builder.where(`${TABLE}.status`, 'accepted')
    if (status === 'pending') builder.where(`${TABLE}.status`, 'pending').where(`${TABLE}.expires_at`, '>', this.knex.fn.now())
    if (status === 'expired') builder.where(`${TABLE}.status`, 'pending').where(`${TABLE}.expires_at`, '<=', this.knex.fn.now())
    return super._find({ ...params, query, knex: builder } as any)
  }

  // `any` only to match the adapter's overloads (which include arrays); the hooks validated one InvitationData.
  async create(body: any, params: InvitationParams = {}): Promise<any> {
    const data = body as InvitationData
    const organizationId = data.organization_id!
    return databaseOf(params, this.knex).transaction(async (trx) => {
      // Serialises invitations of one address to one organization, so two concurrent requests
      // cannot both pass the checks below.
      await trx.raw('SELECT pg_advisory_xact_lock(?::int, hashtext(?))', [organizationId, data.email])
      await this.assertInvitable(trx, organizationId, data.email)
      const token = newToken()
      const [invitation] = await this.written(trx, trx(TABLE)
        .insert({
          organization_id: organizationId,
          email: data.email,
          role: data.role,
          status: 'pending',
          token_hash: hashToken(token),
          // now() is the transaction's time, the same instant as created_at's default.
          expires_at: trx.raw('now() + make_interval(secs => ?)', [this.app.get('inviteTtlSeconds')]),
          created_by_user_id: params.caller?.userId ?? null
        })
        .returning('*'))
      await enqueueMail(trx, await this.invitationMail(trx, invitation, token, params))
      return { ...invitation, token } as Invitation
    })
  }

  async patch(id: NullableId, data: InvitationAccept, params: InvitationParams = {}): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Accept one invitation at a time')
    if (!/^\d{1,9}$/.test(String(id))) throw invalidToken()
    const { accepted, membership } = await databaseOf(params, this.knex).transaction(async (trx) => {
      // Found through the unique token index; the row lock makes a second acceptance wait and then see 'accepted'.
      const invitation = await trx(TABLE)
        .where({ token_hash: hashToken(data.token), id: Number(id) })
        .whereNull('deleted_at')
        .forUpdate()
        .first('*', trx.raw('expires_at <= now() as expired'))
      if (!invitation || invitation.status !== 'pending' || invitation.expired) throw invalidToken()
      // Accepting verifies no address: the inviter holds the token too, and may be the account's
      // own holder (sign up with someone's address, invite it, accept signed in). Only the
      // verification link mailed by the users service proves a mailbox.
      const userId = await this.accountOf(trx, invitation, data, params)
      const granted = await this.grantMembership(trx, invitation, userId)
      const [accepted] = await this.written(trx, trx(TABLE)
        .where({ organization_id: invitation.organization_id, id: invitation.id })
        .update({ status: 'accepted', accepted_by_user_id: userId, accepted_at: trx.fn.now(), updated_at: trx.fn.now() })
        .returning('*'))
      const [member] = granted ? await this.app.service('organizations-users').rendered([granted.row], { transaction: { trx } }) : []
      return { accepted: accepted as Invitation, membership: granted && { event: granted.event, record: member } }
    })
    // The new member (or the new role) is an event of the memberships service, for the organization's members.
    if (membership) emitAfterCommit(params, this.app.service('organizations-users') as any, membership.event, membership.record)
    return accepted
  }

  /** Revokes a pending invitation (soft delete); its token stops working at once. */
  async remove(id: NullableId, params: InvitationParams = {}): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Revoke one invitation at a time')
    const before = params.before ?? (await this.storedRow(id, params))
    // status = 'pending' in the statement itself: a concurrent acceptance holds the row lock,
    // and once it commits this statement finds the row accepted and changes nothing.
    const db = databaseOf(params, this.knex)
    const [revoked] = await this.written(db, db(TABLE)
      .where({ organization_id: before.organization_id, id: before.id, status: 'pending' })
      .whereNull('deleted_at')
      .update({ deleted_at: this.knex.fn.now(), updated_at: this.knex.fn.now() })
      .returning('*'))
    if (!revoked) throw new BadRequest('Only a pending invitation can be revoked')
    return revoked as Invitation
  }

  private async assertInvitable(trx: Knex.Transaction, organizationId: number, email: string) {
    const member = await trx('organizations_users as m')
      .join('users as u', 'u.id', 'm.user_id')
      .where('m.organization_id', organizationId)
      .whereRaw('lower(u.email) = ?', [email])
      .first('m.id')
    if (member) {
      throw new BadRequest('This e-mail address already belongs to a member of the organization', {
        errors: { email: 'is already a member of the organization' }
      })
    }
    const pending = await trx(TABLE)
      .where({ organization_id: organizationId, email, status: 'pending' })
      .whereNull('deleted_at')
      .where('expires_at', '>', trx.fn.now())
      .first('id')
    if (pending) {
      throw new BadRequest('A pending invitation for this e-mail address already exists in this organization', {
        errors: { email: 'already has a pending invitation' }
      })
    }
  }

  private async invitationMail(trx: Knex.Transaction, invitation: Invitation, token: string, params: InvitationParams) {
    const organization = await trx('organizations').where({ id: invitation.organization_id }).first('name')
    const user = params.user
    const name = [user?.first_name, user?.last_name].filter(Boolean).join(' ')
    const inviter = name || user?.email || 'Someone'
    const link = acceptanceLink(this.app.get('appUrl'), this.app.get('inviteLinkPath'), token)
    const expires = new Date(invitation.expires_at).toISOString()
    return {
      kind: 'invitation',
      organizationId: invitation.organization_id,
      to: invitation.email,
      subject: `${inviter} invited you to join ${organization.name}`,
      text: [
        'Hello,',
        '',
        `${name && user ? `${name} (${user.email})` : inviter} invited you to join ${organization.name} as ${invitation.role}.`,
        '',
        `Accept the invitation: ${link}`,
        '',
        `Your invitation token: ${token}`,
        `The link can be used once and is valid until ${expires}.`,
        'If you did not expect this invitation, you can ignore this e-mail.'
      ].join('\n')
    }
  }

  /**
   * The account that joins. An acceptance never hands over an existing account, since the token
   * proves nothing about who reads the mailbox (the inviter holds it too):
   * - with credentials, the authenticated invitee (the only way in for an address with an account);
   * - without, a new account for an address that has none, created through the users service
   *   (same validation, password hash and verification link as a sign-up).
   */
  private async accountOf(trx: Knex.Transaction, invitation: Invitation, data: InvitationAccept, params: InvitationParams) {
    if (params.caller) {
      // The hooks let only the invitee accept with credentials; checked here again as the service's own rule.
      if (params.user?.email.toLowerCase() !== invitation.email) throw new Forbidden(FORBIDDEN_MESSAGE)
      return params.caller.userId
    }
    const existing = await trx('users').where({ email: invitation.email }).first('id')
    if (existing || data.password === undefined) throw signInOrSetPassword()
    const created = await this.app.service('users').create(
      { email: invitation.email, password: data.password, first_name: data.first_name ?? null, last_name: data.last_name ?? null },
      { transaction: { trx } } as UserParams
    )
    return created.id
  }

  /** Adds the member with the invited role, or changes the role of an existing member; an invitation never demotes an owner. */
  private async grantMembership(trx: Knex.Transaction, invitation: Invitation, userId: number) {
    const membership = await trx('organizations_users')
      .where({ organization_id: invitation.organization_id, user_id: userId })
      .forUpdate()
      .first('id', 'role')
    if (!membership) {
      const [row] = await trx('organizations_users').insert({ organization_id: invitation.organization_id, user_id: userId, role: invitation.role }).returning('*')
      return { event: 'created', row }
    }
    if (membership.role !== 'owner' && membership.role !== invitation.role) {
      const [row] = await trx('organizations_users')
        .where({ organization_id: invitation.organization_id, id: membership.id })
        .update({ role: invitation.role, updated_at: trx.fn.now() })
        .returning('*')
      return { event: 'patched', row }
    }
    return undefined
  }
}

/** APP_URL + INVITE_LINK_PATH, with {token} in the path replaced by the token (appended when absent). */
export const acceptanceLink = tokenLink

export const getOptions = (app: Application): InvitationServiceOptions => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: TABLE,
  app
})
