import crypto from 'node:crypto'
import type { Application } from '../declarations.js'

const ALGORITHM = 'aes-256-gcm'
const VERSION = 'v1'
const HKDF_INFO = 'crm channel credentials v1'

/**
 * The key of channel credentials at rest: CHANNEL_SECRETS_KEY (32 bytes, base64), or when it is
 * unset, a key derived from AUTH_SECRET with HKDF (a warning in production: rotating AUTH_SECRET
 * would then make the stored credentials unreadable).
 */
export function channelSecretsKey(app: Application): Buffer {
  const configured = app.get('channelSecretsKey')
  if (configured) {
    const key = Buffer.from(configured, 'base64')
    if (key.length !== 32) throw new Error('CHANNEL_SECRETS_KEY must be 32 bytes, base64-encoded')
    return key
  }
  if (process.env.NODE_ENV === 'production') {
    app.get('logger').warn('CHANNEL_SECRETS_KEY is not set: channel credentials are encrypted with a key derived from AUTH_SECRET')
  }
  const secret = app.get('authentication')!.secret as string
  return Buffer.from(crypto.hkdfSync('sha256', secret, 'crm-channel-accounts', HKDF_INFO, 32))
}

/** AES-256-GCM with a random 96-bit nonce: "v1.<nonce>.<tag>.<ciphertext>", base64url parts. */
export function encryptSecret(key: Buffer, plain: Record<string, unknown>): string {
  const nonce = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv(ALGORITHM, key, nonce)
  const sealed = Buffer.concat([cipher.update(JSON.stringify(plain), 'utf8'), cipher.final()])
  return [VERSION, nonce, cipher.getAuthTag(), sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
}

export function decryptSecret<T = Record<string, string>>(key: Buffer, stored: string): T {
  const [version, nonce, tag, sealed] = stored.split('.')
  if (version !== VERSION) throw new Error('unknown credentials format')
  const decipher = crypto.createDecipheriv(ALGORITHM, key, Buffer.from(nonce, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  const plain = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()])
  return JSON.parse(plain.toString('utf8')) as T
}

/** Constant-time equality of two texts (signatures, tokens). */
export function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}
