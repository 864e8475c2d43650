import { BadRequest } from '@feathersjs/errors'
import type { LocalStrategy } from '@feathersjs/authentication-local'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { hashToken } from '../../../authentication.js'
import { storeLinkToken } from './link-tokens.js'
import { enqueueMail, tokenLink } from '../../../mail/index.js'

/**
 * Password reset, the way back into an account: a request mails a single-use link to the
 * address when it has an account (its token stored as a SHA-256 hash in password_resets, written
 * with its mail in one transaction through the mail outbox), and the same answer either way, so
 * that nobody learns which addresses have accounts. Redeeming the link sets the password.
 */

export const PASSWORD_RESET_REQUESTED = 'If an account has this address, a link to choose a new password has been sent to it'
export const INVALID_RESET_MESSAGE = 'The password reset token is invalid, has already been used or has expired'

const RESETS = 'password_resets'

/** Writes a reset token and its mail when the address has an account; nothing otherwise. */
export async function mailPasswordResetLink(app: Application, db: Knex, email: string) {
  await db.transaction(async (trx) => {
    const user = await trx('users').where({ email: email.trim().toLowerCase() }).first('id', 'email')
    if (!user) return
    const { token, expiresAt } = await storeLinkToken(trx, RESETS, user, app.get('passwordResetTtlSeconds'))
    const link = tokenLink(app.get('appUrl'), app.get('passwordResetLinkPath'), token)
    await enqueueMail(trx, {
      kind: 'password-reset',
      to: user.email,
      subject: 'Choose a new password',
      text: [
        'Hello,',
        '',
        `Someone asked to choose a new password for the account of ${user.email}. If it was you, open this link: ${link}`,
        '',
        `The link can be used once and is valid until ${expiresAt}. Choosing a new password signs you out everywhere.`,
        'If you did not ask for it, you can ignore this e-mail: your password stays as it is.'
      ].join('\n')
    })
  })
}

/**
 * Spends a reset token in the caller's transaction and answers the account it opens: every other
 * open link of the account is spent with it. A token mailed to an address the account no longer
 * has opens nothing. The row lock makes a concurrent second use wait, then find the token used.
 */
export async function redeemPasswordReset(trx: Knex.Transaction, token: string): Promise<number> {
  const reset = await trx(`${RESETS} as r`)
    .join('users as u', 'u.id', 'r.user_id')
    .where('r.token_hash', hashToken(token))
    .whereNull('r.used_at')
    .where('r.expires_at', '>', trx.fn.now())
    .whereRaw('u.email = r.email')
    .forUpdate('r')
    .first('r.user_id')
  if (!reset) throw new BadRequest(INVALID_RESET_MESSAGE, { errors: { token: 'is invalid or has expired' } })
  await trx(RESETS).where({ user_id: reset.user_id }).whereNull('used_at').update({ used_at: trx.fn.now() })
  return reset.user_id
}

/** A new password as the local strategy stores it (the hash sign-up writes). */
export const hashedPassword = (app: Application, password: string): Promise<string> =>
  (app.service('authentication').getStrategy('local') as LocalStrategy).hashPassword(password, {})
