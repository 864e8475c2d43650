import type { Knex } from 'knex'
import { hashToken, newToken } from '../../../authentication.js'

/**
 * A new single-use token of a mailed link (e-mail verification, password reset), written in the
 * caller's transaction to its table as a SHA-256 hash with the address it is mailed to and its
 * expiry. The plain token goes into the mail only.
 */
export async function storeLinkToken(trx: Knex.Transaction, table: string, user: { id: number; email: string }, ttlSeconds: number) {
  const token = newToken()
  const [stored] = await trx(table)
    .insert({ user_id: user.id, email: user.email, token_hash: hashToken(token), expires_at: trx.raw('now() + make_interval(secs => ?)', [ttlSeconds]) })
    .returning('expires_at')
  return { token, expiresAt: new Date(stored.expires_at).toISOString() }
}
