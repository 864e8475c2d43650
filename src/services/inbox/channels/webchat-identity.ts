import crypto from 'node:crypto'
import { newToken } from '../../../authentication.js'
import type { Application } from '../../../declarations.js'
import { channelSecretsKey, encryptSecret, sameText } from './secrets.js'

/**
 * A web-chat widget's identity secret. The site's back end signs the id of its signed-in user
 * with it (user_hash = hex HMAC-SHA256 of user_id under the secret), and only a session that
 * brings this signature may join the user's contact and thread: anything else the widget sends
 * is a claim. The secret is made by the server, kept encrypted as the account's credentials, and
 * answered once, by the call that made it.
 */
export function newIdentitySecret(app: Application, accountId: number) {
  const secret = newToken()
  return { secret, credentials: encryptSecret(channelSecretsKey(app), { identity_secret: secret }, accountId) }
}

export const userHashOf = (secret: string, userId: string) => crypto.createHmac('sha256', secret).update(userId, 'utf8').digest('hex')

/** Whether user_hash is the widget's signature of user_id (compared in constant time). */
export const provesUser = (secret: string, userId: string, userHash: string) => sameText(userHashOf(secret, userId), userHash.toLowerCase())
