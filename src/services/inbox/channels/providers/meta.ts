import crypto from 'node:crypto'
import { sameText } from '../secrets.js'
import { callProvider, failedAccountCheck } from './http.js'
import type { AccountCheck, ChannelAccountRecord, InboundEvent, InboundRequest, ProviderError, ProviderUrls } from './types.js'

const header = (request: InboundRequest, name: string) => {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of the raw body with the app secret,
 * compared in constant time. Computed over the bytes as received: Meta escapes non-ASCII
 * characters and slashes, so a re-encoded body would not match.
 */
export function verifyMetaSignature(request: InboundRequest, account: ChannelAccountRecord): boolean {
  const secret = account.credentials?.app_secret
  const signature = header(request, 'x-hub-signature-256')
  if (!secret || !signature) return false
  const expected = `sha256=${crypto.createHmac('sha256', secret).update(request.rawBody).digest('hex')}`
  return sameText(signature, expected)
}

/** Meta's subscription handshake: hub.mode=subscribe and the account's verify token answer hub.challenge. */
export function metaChallenge(query: Record<string, unknown>, account: ChannelAccountRecord): string | undefined {
  const token = query['hub.verify_token']
  const challenge = query['hub.challenge']
  if (query['hub.mode'] !== 'subscribe' || typeof token !== 'string' || typeof challenge !== 'string') return undefined
  return sameText(token, account.verify_token) ? challenge : undefined
}

/**
 * Meta's ids (pages, Instagram accounts, phone number ids, page- and Instagram-scoped user ids,
 * wa_id) are digits. A sender id from a payload is taken only in that form: it goes into Graph
 * URLs (the User Profile API) and contact identities, where a '..' or a '/' would reach elsewhere.
 */
export const isMetaId = (value: string) => /^[0-9]{1,64}$/.test(value)

/** The event that stands for one whose sender id is not a Meta id. */
export const notMetaSender = (senderId: string): InboundEvent => ({ type: 'skipped', reason: `the sender id ${JSON.stringify(senderId.slice(0, 64))} is not a Meta id` })

/** A Graph API error answer: {error: {message, type, code, error_subcode, fbtrace_id}}. */
export const graphError = (status: number, body: any): ProviderError => ({
  code: String(body?.error?.code ?? status),
  message: String(body?.error?.error_user_msg ?? body?.error?.message ?? `HTTP ${status}`)
})

export const graphHeaders = (token: string | undefined) => ({
  Authorization: `Bearer ${token ?? ''}`,
  'Content-Type': 'application/json'
})

/**
 * Whether Graph lets these credentials read the account's own object (a path under the Graph
 * base) and answers it as accept expects. The call carries appsecret_proof, the HMAC-SHA256 of
 * the token keyed with the app secret: Graph refuses a proof that is not the token's app's, so
 * the app secret that will verify the webhooks is checked too.
 */
export async function graphAccountCheck(urls: ProviderUrls, path: string, credentials: Record<string, string>, tokenField: string, accept: (body: any) => boolean): Promise<AccountCheck> {
  const token = credentials[tokenField] ?? ''
  const proof = crypto.createHmac('sha256', credentials.app_secret ?? '').update(token).digest('hex')
  const answer = await callProvider(`${urls.metaGraphUrl}/${path}${path.includes('?') ? '&' : '?'}appsecret_proof=${proof}`, { method: 'GET', headers: graphHeaders(token) }, graphError)
  if (!answer.ok) return failedAccountCheck(answer)
  return accept(answer.body) ? { ok: true } : { ok: false, retryable: false, field: 'credentials', message: 'the Graph API answered for another object' }
}

/** The kind of media a file is sent as, from its type: image, video, audio, or a document/file. */
export function mediaKind(fileType: string): 'image' | 'video' | 'audio' | 'file' {
  if (fileType.startsWith('image/')) return 'image'
  if (fileType.startsWith('video/')) return 'video'
  if (fileType.startsWith('audio/')) return 'audio'
  return 'file'
}

export const fromUnixSeconds = (value: unknown) => new Date(Number(value) * 1000 || Date.now())
