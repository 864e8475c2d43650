/**
 * Webhook payloads built from the providers' documented examples (Meta's WhatsApp Cloud API
 * webhooks reference, the Messenger Platform webhook events reference, Twilio's messaging
 * webhook and status callback parameters), with the test account's ids.
 */

/** JSON as Meta sends it: non-ASCII characters and slashes escaped (\u00e9, \/). */
export const metaJson = (payload: unknown) =>
  JSON.stringify(payload).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).replace(/\//g, '\\/')

const whatsappChange = (phoneNumberId: string, value: Record<string, unknown>) => ({
  object: 'whatsapp_business_account',
  entry: [{
    id: '102290129340398',
    changes: [{
      value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId }, ...value },
      field: 'messages'
    }]
  }]
})

export interface WhatsAppSender {
  waId?: string
  userId?: string
  name?: string
}

export const whatsappText = (phoneNumberId: string, sender: WhatsAppSender, id: string, body: string) =>
  whatsappChange(phoneNumberId, {
    contacts: [{ profile: { name: sender.name ?? 'Sheena Nelson' }, ...(sender.waId ? { wa_id: sender.waId } : {}), ...(sender.userId ? { user_id: sender.userId } : {}) }],
    messages: [{
      ...(sender.waId ? { from: sender.waId } : {}), ...(sender.userId ? { from_user_id: sender.userId } : {}),
      id, timestamp: String(Math.floor(Date.now() / 1000)), text: { body }, type: 'text'
    }]
  })

export const whatsappImage = (phoneNumberId: string, waId: string, id: string) =>
  whatsappChange(phoneNumberId, {
    contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: waId }],
    messages: [{
      from: waId, id, timestamp: String(Math.floor(Date.now() / 1000)), type: 'image',
      image: { caption: 'The broken part', mime_type: 'image/jpeg', sha256: 'xqzX1Z3Yf9Qw3Jg4vWz8Jv2cJpQz1sT3', id: '1003383421387256' }
    }]
  })

export const whatsappLocation = (phoneNumberId: string, waId: string, id: string) =>
  whatsappChange(phoneNumberId, {
    contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: waId }],
    messages: [{
      from: waId, id, timestamp: String(Math.floor(Date.now() / 1000)), type: 'location',
      location: { address: '1 Hacker Way, Menlo Park, CA 94025', latitude: 37.483307, longitude: -122.148981, name: 'Main Office' }
    }]
  })

export const whatsappButtonReply = (phoneNumberId: string, waId: string, id: string) =>
  whatsappChange(phoneNumberId, {
    contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: waId }],
    messages: [{
      context: { from: '15550783881', id: 'wamid.HBgLMTY0NjcwNDM1OTUVAgARGBI1RjQyNUE3NEYxMzAzMzQ5MkEA' },
      from: waId, id, timestamp: String(Math.floor(Date.now() / 1000)), type: 'interactive',
      interactive: { type: 'button_reply', button_reply: { id: 'unique-postback-id', title: 'Yes, please' } }
    }]
  })

export const whatsappStatus = (phoneNumberId: string, waId: string, id: string, status: string, errors?: unknown[]) =>
  whatsappChange(phoneNumberId, {
    statuses: [{
      id, status, timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: waId,
      ...(status === 'failed' ? { errors } : { conversation: { id: 'CONVERSATION_ID', origin: { type: 'service' } }, pricing: { billable: true, pricing_model: 'CBP', category: 'service' } })
    }]
  })

/** Messenger (object 'page') or Instagram (object 'instagram'): entry[].messaging[]. */
export const messagingEntry = (object: 'page' | 'instagram', ownId: string, messaging: Record<string, unknown>[]) => ({
  object,
  entry: [{ id: ownId, time: Date.now(), messaging }]
})

export const messengerText = (ownId: string, senderId: string, mid: string, text: string) => ({
  sender: { id: senderId }, recipient: { id: ownId }, timestamp: Date.now(), message: { mid, text }
})

export const messengerDelivery = (ownId: string, senderId: string, watermark: number, mids?: string[]) => ({
  sender: { id: senderId }, recipient: { id: ownId }, delivery: { ...(mids ? { mids } : {}), watermark }
})

export const messengerRead = (ownId: string, senderId: string, watermark: number) => ({
  sender: { id: senderId }, recipient: { id: ownId }, timestamp: Date.now(), read: { watermark }
})

/** Twilio's incoming message parameters (form-encoded). */
export const twilioIncoming = (accountSid: string, from: string, to: string, sid: string, body: string, media: string[] = []) => ({
  ToCountry: 'US', ToState: 'CA', SmsMessageSid: sid, NumMedia: String(media.length), ToCity: 'SAN FRANCISCO', FromZip: '94105',
  SmsSid: sid, FromState: 'CA', SmsStatus: 'received', FromCity: 'SAN FRANCISCO', Body: body, FromCountry: 'US', To: to,
  ToZip: '94105', NumSegments: '1', MessageSid: sid, AccountSid: accountSid, From: from, ApiVersion: '2010-04-01',
  ...Object.fromEntries(media.flatMap((url, i) => [[`MediaUrl${i}`, url], [`MediaContentType${i}`, 'image/jpeg']]))
})

/** Twilio's status callback parameters. */
export const twilioStatus = (accountSid: string, from: string, to: string, sid: string, status: string, errorCode?: string) => ({
  SmsSid: sid, SmsStatus: status, MessageStatus: status, To: to, MessageSid: sid, AccountSid: accountSid, From: from,
  ApiVersion: '2010-04-01', ...(errorCode ? { ErrorCode: errorCode } : {})
})
