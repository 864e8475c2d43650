import crypto from 'node:crypto'
import type { Application } from '../../../declarations.js'

const ALGORITHM = 'aes-256-gcm'
const VERSION = 'v2'
const HKDF_INFO = 'crm channel credentials v1'

/**
 * The key of channel credentials at rest: CHANNEL_SECRETS_KEY (32 bytes, base64), or when it is
 * unset, a key derived from AUTH_SECRET with HKDF (rotating AUTH_SECRET would then make the stored
 * credentials unreadable: warnIfKeyDerived says so at start-up).
 */
export function channelSecretsKey(app: Application): Buffer {
  const configured = app.get('channelSecretsKey')
  if (configured) {
    const key = Buffer.from(configured, 'base64')
    if (key.length !== 32) throw new Error('CHANNEL_SECRETS_KEY must be 32 bytes, base64-encoded')
    return key
  }
  const secret = app.get('authentication')!.secret as string
  return Buffer.from(crypto.hkdfSync('sha256', secret, 'crm-channel-accounts', HKDF_INFO, 32))
}

/** At start-up, with CHANNEL_SECRETS_KEY_WARNING on (production): a warning when the key is derived from AUTH_SECRET. */
export function warnIfKeyDerived(app: Application) {
  if (app.get('channelSecretsKeyWarning') && !app.get('channelSecretsKey')) {
    app.get('logger').warn('CHANNEL_SECRETS_KEY is not set: channel credentials are encrypted with a key derived from AUTH_SECRET, which can then not be rotated without making them unreadable')
  }
}

/** The associated data of an account's credentials: a ciphertext opens only on the row it was written for. */
const boundTo = (accountId: number) => Buffer.from(`channel_accounts:${accountId}`)

const parts = (stored: string) => {
  const [version, nonce, tag, sealed] = stored.split('.')
  return { version, nonce: Buffer.from(nonce ?? '', 'base64url'), tag: Buffer.from(tag ?? '', 'base64url'), sealed: Buffer.from(sealed ?? '', 'base64url') }
}

function open(key: Buffer, stored: string, aad: Buffer | undefined) {
  const { nonce, tag, sealed } = parts(stored)
  const decipher = crypto.createDecipheriv(ALGORITHM, key, nonce)
  if (aad) decipher.setAAD(aad)
  decipher.setAuthTag(tag)
  return JSON.parse(Buffer.concat([decipher.update(sealed), decipher.final()]).toString('utf8'))
}

/** AES-256-GCM with a random 96-bit nonce, bound to the account's id: "v2.<nonce>.<tag>.<ciphertext>", base64url parts. */
export function encryptSecret(key: Buffer, plain: Record<string, unknown>, accountId: number): string {
  const nonce = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv(ALGORITHM, key, nonce)
  cipher.setAAD(boundTo(accountId))
  const sealed = Buffer.concat([cipher.update(JSON.stringify(plain), 'utf8'), cipher.final()])
  return [VERSION, nonce, cipher.getAuthTag(), sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
}

/** The credentials of one account; throws for a ciphertext written for another account or under another key. */
export function decryptSecret<T = Record<string, string>>(key: Buffer, stored: string, accountId: number): T {
  if (parts(stored).version !== VERSION) throw new Error('unknown credentials format')
  return open(key, stored, boundTo(accountId)) as T
}

/**
 * The v2 form of credentials written before they were bound to their account ("v1", no
 * associated data), or undefined when they are v2 already. A v1 ciphertext carries no account,
 * so it is trusted for the row it sits on only once, when start-up re-encrypts it
 * (reencryptUnboundCredentials); decryptSecret refuses v1 from then on, wherever it appears.
 */
export function boundCopy(key: Buffer, stored: string, accountId: number): string | undefined {
  if (parts(stored).version !== 'v1') return undefined
  return encryptSecret(key, open(key, stored, undefined), accountId)
}

/** Constant-time equality of two texts (signatures, tokens). */
export function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}
