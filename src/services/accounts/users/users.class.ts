import { BadRequest, MethodNotAllowed, NotFound } from '@feathersjs/errors'
import type { NullableId, Params } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { LocalStrategy } from '@feathersjs/authentication-local'
import type { Knex } from 'knex'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import type { Application } from '../../../declarations.js'
import { hashToken } from '../../../authentication.js'
import { storeLinkToken } from './link-tokens.js'
import { enqueueMail, tokenLink } from '../../../mail/index.js'
import { userSchema } from './users.schema.js'
import type { EmailVerification, PasswordReset, PasswordResetRequest, User, UserData, UserPatch, UserQuery } from './users.schema.js'
import { PASSWORD_RESET_REQUESTED, hashedPassword, mailPasswordResetLink, redeemPasswordReset } from './password-reset.js'

export type { EmailVerification, PasswordReset, PasswordResetRequest, User, UserData, UserPatch, UserQuery }

export type UserParams = KnexAdapterParams<UserQuery>

export interface UserServiceOptions extends RecordServiceOptions {
  app: Application
}

export const INVALID_VERIFICATION_MESSAGE = 'The verification token is invalid, has already been used or has expired'

const VERIFICATIONS = 'email_verifications'

/** The adapter's params for a write inside an open transaction. */
const inTrx = (params: UserParams, trx: Knex.Transaction) => ({ ...params, transaction: { trx } }) as UserParams

/**
 * Accounts are global (not tenant records); a caller only ever reaches their own.
 *
 * Addresses are unverified until proven: sign-up and every e-mail change mail a single-use link
 * (its token stored as a SHA-256 hash in email_verifications, written in the change's
 * transaction through the mail outbox), and `verifyEmail` (POST /users, X-Service-Method:
 * verifyEmail) redeems it, and nothing else verifies an address (an invitation's token does not:
 * the inviter holds it too). Unverified accounts work as verified ones do.
 *
 * Changing the password or the e-mail address needs the current password and ends every
 * session: JWTs issued before users.sessions_valid_after are refused.
 */
export class UserService<ServiceParams extends Params = UserParams> extends RecordService<
  User,
  UserData,
  UserParams,
  UserPatch
> {
  private app: Application

  constructor(options: UserServiceOptions) {
    super(options)
    this.app = options.app
  }

  async create(data: any, params: UserParams = {}): Promise<any> {
    return this.inTransaction(params, async (trx) => {
      const user = await super._create(data, inTrx(params, trx))
      await this.mailVerificationLink(trx, user)
      return user
    })
  }

  async patch(id: NullableId, data: UserPatch, params: UserParams = {}): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Change one account at a time')
    const { current_password: currentPassword, ...changes } = data as UserPatch & Record<string, unknown>
    return this.inTransaction(params, async (trx) => {
      const stored = await trx('users').where({ id }).forUpdate().first('id', 'email', 'password')
      if (!stored) throw new NotFound(`No record found for id '${id}'`)
      const emailChanged = changes.email !== undefined && changes.email !== stored.email
      const passwordChanged = changes.password !== undefined
      if (emailChanged || passwordChanged) {
        // Only a request from outside must prove who it is; the server's own calls are trusted.
        if (params.provider) await this.assertCurrentPassword(stored, currentPassword)
        changes.sessions_valid_after = new Date()
        if (emailChanged) changes.email_verified_at = null
      }
      const user = await super._patch(id, changes as UserPatch, inTrx(params, trx))
      if (emailChanged) await this.mailVerificationLink(trx, user)
      return user
    })
  }

  /** Redeems a verification link: the account's current address becomes verified; the token is spent. */
  async verifyEmail(data: EmailVerification, _params: UserParams = {}): Promise<User> {
    return this.knex.transaction(async (trx) => {
      // The row lock makes a concurrent second use wait, then find the token used.
      const verification = await trx(`${VERIFICATIONS} as v`)
        .join('users as u', 'u.id', 'v.user_id')
        .where('v.token_hash', hashToken(data.token))
        .whereNull('v.used_at')
        .where('v.expires_at', '>', trx.fn.now())
        // A link mailed to a previous address does not verify the current one.
        .whereRaw('u.email = v.email')
        .forUpdate('v')
        .first('v.id', 'v.user_id')
      if (!verification) throw new BadRequest(INVALID_VERIFICATION_MESSAGE, { errors: { token: 'is invalid or has expired' } })
      await trx(VERIFICATIONS).where({ id: verification.id }).update({ used_at: trx.fn.now() })
      const [user] = await this.written(trx, trx('users')
        .where({ id: verification.user_id })
        .update({ email_verified_at: trx.raw('coalesce(email_verified_at, (SELECT now()))'), updated_at: trx.fn.now() })
        .returning('*'))
      return user as User
    })
  }

  /** Mails a reset link when the address has an account (password-reset.ts); the answer is the same either way. */
  async ['request-password-reset'](data: PasswordResetRequest, _params: UserParams = {}): Promise<{ message: string }> {
    await mailPasswordResetLink(this.app, this.knex, data.email)
    return { message: PASSWORD_RESET_REQUESTED }
  }

  /**
   * Redeems a reset link: the new password, the address verified (the link reached its mailbox),
   * and every earlier session ended, sockets included (realtime-connections.ts).
   */
  async ['reset-password'](data: PasswordReset, _params: UserParams = {}): Promise<User> {
    const password = await hashedPassword(this.app, data.password)
    return this.knex.transaction(async (trx) => {
      const userId = await redeemPasswordReset(trx, data.token)
      const [user] = await this.written(trx, trx('users')
        .where({ id: userId })
        .update({ password, email_verified_at: trx.raw('coalesce(email_verified_at, (SELECT now()))'), sessions_valid_after: new Date(), updated_at: trx.fn.now() })
        .returning('*'))
      return user as User
    })
  }

  private inTransaction<T>(params: UserParams, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    const outer = params.transaction?.trx
    return outer ? work(outer) : this.knex.transaction(work)
  }

  private async assertCurrentPassword(stored: { password: string }, currentPassword: unknown) {
    const refused = (reason: string) =>
      new BadRequest('Changing the password or the e-mail address needs the current password', { errors: { current_password: reason } })
    if (typeof currentPassword !== 'string' || currentPassword === '') throw refused('is required')
    if (!(await passwordMatches(this.app, stored, currentPassword))) throw refused('is wrong')
  }

  /** Writes a verification token and its e-mail in the caller's transaction. */
  private async mailVerificationLink(trx: Knex.Transaction, user: User) {
    const { token, expiresAt } = await storeLinkToken(trx, VERIFICATIONS, user, this.app.get('emailVerificationTtlSeconds'))
    const link = tokenLink(this.app.get('appUrl'), this.app.get('emailVerificationLinkPath'), token)
    await enqueueMail(trx, {
      kind: 'email-verification',
      to: user.email,
      subject: 'Confirm your e-mail address',
      text: [
        'Hello,',
        '',
        `Please confirm that ${user.email} is your e-mail address: ${link}`,
        '',
        `The link can be used once and is valid until ${expiresAt}.`,
        'If you did not create an account or change your address, you can ignore this e-mail.'
      ].join('\n')
    })
  }
}

/** Whether a plain password matches an account's stored hash (the local strategy's comparison). */
async function passwordMatches(app: Application, account: { password: string }, password: string) {
  const local = app.service('authentication').getStrategy('local') as LocalStrategy
  return local.comparePassword(account, password).then(
    () => true,
    () => false
  )
}

export const getOptions = (app: Application): UserServiceOptions => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'users',
  softDelete: false,
  read: { schema: userSchema, hidden: ['password', 'sessions_valid_after'] },
  app
})
