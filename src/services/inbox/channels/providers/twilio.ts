import { createRequire } from 'node:module'
import querystring from 'node:querystring'
import { callProvider, failedAccountCheck } from './http.js'
import type { ChannelAdapter, ContentType, InboundEvent, ProviderStatus } from './types.js'
import { mediaKind } from './meta.js'

/** Twilio's MessageStatus values that move a message; the others (accepted, queued, sending...) do not. */
const STATUSES: Record<string, ProviderStatus> = { sent: 'sent', delivered: 'delivered', read: 'read', undelivered: 'failed', failed: 'failed' }

const formOf = (raw: Buffer) => querystring.parse(raw.toString('utf8')) as Record<string, string | string[]>
const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)

/** HTTP Basic with the Account SID and the auth token, as Twilio's REST API takes them. */
const basicAuth = (sid: string, token: string | undefined) => `Basic ${Buffer.from(`${sid}:${token ?? ''}`).toString('base64')}`

/** A Twilio REST error answer: {code, message, more_info, status}. */
const twilioError = (status: number, body: any) => ({ code: String(body?.code ?? status), message: String(body?.message ?? `HTTP ${status}`) })

/** Twilio Programmable Messaging: form-encoded webhooks signed with X-Twilio-Signature, POST .../Messages.json. */
// The twilio package is large in memory: it loads with the first Twilio webhook, not with the application.
const require = createRequire(import.meta.url)
let twilioPackage: typeof import('twilio') | undefined
const twilio = () => (twilioPackage ??= require('twilio') as typeof import('twilio'))

export const twilioSms: ChannelAdapter = {
  /** The twilio package's validation: HMAC-SHA1 over the configured URL and the sorted form parameters, with the auth token. */
  verify(request, account) {
    const signature = one(request.headers['x-twilio-signature'])
    const token = account.credentials?.auth_token
    if (!signature || !token) return false
    return twilio().validateRequest(token, signature, request.url, formOf(request.rawBody))
  },

  parse(request) {
    const form = formOf(request.rawBody)
    const sid = one(form.MessageSid) ?? one(form.SmsSid)
    if (!sid) return []
    // Status callbacks come to the /status sibling URL, or to the account's URL itself when the
    // number or Messaging Service is configured so: an incoming message's status is 'received'.
    const messageStatus = one(form.MessageStatus)
    if (request.variant === 'status' || (messageStatus && !['received', 'receiving'].includes(messageStatus))) {
      const status = STATUSES[messageStatus ?? '']
      if (!status) return []
      const code = one(form.ErrorCode)
      const error = status === 'failed' ? { code: code ?? 'undelivered', message: one(form.ErrorMessage) ?? `Twilio error ${code ?? 'unknown'}` } : undefined
      return [{ type: 'status', providerMessageId: sid, status, occurredAt: new Date(), ...(error ? { error } : {}) }]
    }
    const count = Number(one(form.NumMedia) ?? 0)
    const media = Array.from({ length: Number.isInteger(count) ? Math.min(count, 10) : 0 }, (_, i) => ({
      url: one(form[`MediaUrl${i}`]), content_type: one(form[`MediaContentType${i}`])
    }))
    const first = media[0]?.content_type
    const contentType: ContentType = first ? (mediaKind(first) as ContentType) : 'text'
    const from = one(form.From)
    const event: InboundEvent = {
      type: 'message',
      providerMessageId: sid,
      sender: { phone: from, name: one(form.ProfileName) },
      content: one(form.Body) ?? '',
      contentType,
      metadata: media.length ? { media } : {}
    }
    return [event]
  },

  async send({ message, contact, files, statusCallbackUrl }, account, urls) {
    const sid = String(account.config.account_sid)
    const form = new URLSearchParams()
    form.append('To', contact.phone_e164 ?? '')
    form.append('From', String(account.config.from_number))
    if (message.content) form.append('Body', message.content)
    for (const file of files) form.append('MediaUrl', file.url)
    if (statusCallbackUrl) form.append('StatusCallback', statusCallbackUrl)
    const answer = await callProvider(`${urls.twilioApiUrl}/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`, {
      method: 'POST',
      headers: { Authorization: basicAuth(sid, account.credentials?.auth_token), 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString()
    }, twilioError)
    if (!answer.ok) return answer
    return answer.body?.sid
      ? { ok: true, providerMessageId: String(answer.body.sid) }
      : { ok: false, retryable: false, error: { code: 'unexpected_answer', message: 'Twilio answered without a sid' } }
  },

  /** GET .../IncomingPhoneNumbers.json?PhoneNumber=: the account's numbers of that value (401 for credentials Twilio refuses). */
  async checkAccount(config, credentials, urls) {
    const sid = String(config.account_sid)
    const number = String(config.from_number)
    const answer = await callProvider(`${urls.twilioApiUrl}/2010-04-01/Accounts/${encodeURIComponent(sid)}/IncomingPhoneNumbers.json?PhoneNumber=${encodeURIComponent(number)}`, {
      method: 'GET', headers: { Authorization: basicAuth(sid, credentials.auth_token) }
    }, twilioError)
    if (!answer.ok) return failedAccountCheck(answer)
    const owned = (answer.body?.incoming_phone_numbers ?? []).some((entry: any) => entry?.phone_number === number)
    return owned ? { ok: true } : { ok: false, retryable: false, field: 'config.from_number', message: 'is not a number of this Twilio account' }
  }
}
