import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { created } from '../conversations/fixtures.js'

let sequence = Math.floor(Math.random() * 1e6)
/** A provider id no other test (or test run on the same database) uses. */
export const uniqueDigits = (length = 15) => `${Date.now()}${++sequence}`.padStart(length, '9').slice(-length)
export const uniqueE164 = () => `+1${uniqueDigits(10)}`
/** A UK mobile number no other test uses, valid for its country: what a contact written through the API may hold. */
// 07946: a mobile range of Great Britain itself (07509, say, is Jersey's, whose country is JE).
export const uniqueMobileDigits = () => `7946${uniqueDigits(6)}`
export const twilioSid = () => `AC${uniqueDigits(32).replace(/\d/g, (d) => 'abcdef0123456789'[Number(d)])}`

/** Sender ids no Meta id looks like: each would reach outside its place if it went into a Graph URL. */
export const NOT_META_IDS = ['..', '../x', '%2e%2e', '123/abc']

export const META_SECRET = 'meta-app-secret-for-tests'
export const TWILIO_TOKEN = 'twilio-auth-token-for-tests'

export async function connectWhatsApp(t: TestApp, tenant: Tenant, fields: Record<string, unknown> = {}) {
  return created(await t.http().post('/channel-accounts').set(tenant.key).send({
    channel: 'whatsapp', name: 'Support line',
    config: { phone_number_id: uniqueDigits(), business_account_id: uniqueDigits(), display_phone_number: '+1 555 0100' },
    credentials: { access_token: 'EAAG-whatsapp-access-token', app_secret: META_SECRET },
    ...fields
  }), 'whatsapp account')
}

export async function connectMessenger(t: TestApp, tenant: Tenant, channel: 'messenger' | 'instagram' = 'messenger') {
  const config = channel === 'messenger' ? { page_id: uniqueDigits() } : { instagram_account_id: uniqueDigits() }
  const credentials = channel === 'messenger'
    ? { page_access_token: 'EAAG-page-access-token', app_secret: META_SECRET }
    : { access_token: 'IGQ-instagram-access-token', app_secret: META_SECRET }
  return created(await t.http().post('/channel-accounts').set(tenant.key).send({ channel, name: `${channel} page`, config, credentials }), channel)
}

export async function connectSms(t: TestApp, tenant: Tenant) {
  return created(await t.http().post('/channel-accounts').set(tenant.key).send({
    channel: 'sms', name: 'Twilio number',
    config: { account_sid: twilioSid(), from_number: uniqueE164() },
    credentials: { auth_token: TWILIO_TOKEN }
  }), 'sms account')
}

export async function connectWebchat(t: TestApp, tenant: Tenant, config: Record<string, unknown> = {}) {
  return created(await t.http().post('/channel-accounts').set(tenant.key).send({
    channel: 'webchat', name: 'Site widget', config: { title: 'Chat with us', ...config }
  }), 'webchat account')
}

/** The path part of an account's webhook_url (the tests call the app in-process). */
export const pathOf = (url: string) => new URL(url).pathname
