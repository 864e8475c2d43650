import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { TWILIO_TOKEN, connectSms, pathOf, uniqueE164, uniqueMobileDigits } from './fixtures.js'
import { fakeTwilio, settle, twilioSignature } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { twilioIncoming, twilioStatus } from './payloads.js'

describe('SMS (Twilio)', () => {
  let t: TestApp
  let twilio: FakeProvider
  let acme: Tenant
  let account: any

  beforeAll(async () => {
    twilio = await fakeTwilio()
    t = await startApp({ twilioApiUrl: twilio.url, publicUrl: 'https://crm.example.test', messageRetryBaseMs: 0 })
    acme = await createTenant(t, 'Acme')
    account = await connectSms(t, acme)
  })
  afterAll(async () => {
    await t.close()
    await twilio.stop()
  })
  beforeEach(() => twilio.reset())

  /** POSTs Twilio's form to the account's URL (or its /status sibling), signed for that URL unless told otherwise. */
  const post = (params: Record<string, string>, { status = false, token = TWILIO_TOKEN, signature }: { status?: boolean; token?: string; signature?: string | null } = {}) => {
    const url = `${account.webhook_url}${status ? '/status' : ''}`
    const req = t.http().post(pathOf(url)).type('form')
    if (signature !== null) req.set('X-Twilio-Signature', signature ?? twilioSignature(token, url, params))
    return req.send(new URLSearchParams(params).toString())
  }
  const incoming = async (from: string, sid: string, body: string, media: string[] = []) => {
    const res = await post(twilioIncoming(account.config.account_sid, from, account.config.from_number, sid, body, media))
    expect(res.status, res.text).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/xml/)
    await settle(t, acme.organization.id)
  }
  const sid = () => `SM${crypto.randomUUID().replace(/-/g, '')}`
  const contactWithPhone = (phone: string) => t.db('contacts').where({ organization_id: acme.organization.id, phone }).first()
  const messagesOfContact = async (contactId: number) => {
    const conversation = await t.db('conversations').where({ organization_id: acme.organization.id, contact_id: contactId }).first()
    return { conversation, messages: (await t.http().get('/conversation-messages-sms').set(acme.key).query({ conversation_id: conversation.id })).body.data }
  }

  it('when X-Twilio-Signature is missing or made with another token or for another URL, then 401 and nothing is stored', async () => {
    const from = uniqueE164()
    const params = twilioIncoming(account.config.account_sid, from, account.config.from_number, sid(), 'Hi')
    expect((await post(params, { signature: null })).status).toBe(401)
    expect((await post(params, { token: 'another-token' })).status).toBe(401)
    expect((await post(params, { signature: twilioSignature(TWILIO_TOKEN, 'https://elsewhere.example.test/webhooks/sms', params) })).status).toBe(401)
    await settle(t, acme.organization.id)
    expect(await contactWithPhone(from)).toBeUndefined()
  })

  it('when a text arrives, then the sender becomes a contact with their phone and the message opens an SMS conversation; MMS media are kept', async () => {
    const from = uniqueE164()
    const first = sid()
    await incoming(from, first, 'Can I move my appointment?')
    await incoming(from, sid(), '', ['https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1'])
    const contact = await contactWithPhone(from)
    expect(contact).toMatchObject({ first_name: from, phone: from })
    const { conversation, messages } = await messagesOfContact(contact.id)
    expect(conversation).toMatchObject({ channel: 'sms', channel_account_id: account.id, status: 'open', unread_count: 2 })
    expect(messages.map((m: any) => [m.content_type, m.content, m.provider_message_id])).toEqual([
      ['text', 'Can I move my appointment?', first], ['image', '', messages[1].provider_message_id]
    ])
    expect(messages[1].metadata).toEqual({ media: [{ url: 'https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1', content_type: 'image/jpeg' }] })
  })

  it("when a number of the account's Messaging Service pool other than from_number receives the text, then it is still this account's (the URL decides)", async () => {
    const from = uniqueE164()
    const params = twilioIncoming(account.config.account_sid, from, uniqueE164(), sid(), 'Sent to a pool number')
    expect((await post(params)).status).toBe(200)
    await settle(t, acme.organization.id)
    const { conversation } = await messagesOfContact((await contactWithPhone(from)).id)
    expect(conversation.channel_account_id).toBe(account.id)
  })

  it('when Twilio retries a webhook, then one message is stored', async () => {
    const from = uniqueE164()
    const params = twilioIncoming(account.config.account_sid, from, account.config.from_number, sid(), 'Retried')
    await Promise.all([post(params), post(params), post(params)])
    await settle(t, acme.organization.id)
    expect((await messagesOfContact((await contactWithPhone(from)).id)).messages).toHaveLength(1)
  })

  it('when the agent answers, then Twilio receives exactly the documented form with Basic auth, and delivered status callbacks show on the message', async () => {
    const from = uniqueE164()
    await incoming(from, sid(), 'Hello')
    const { conversation } = await messagesOfContact((await contactWithPhone(from)).id)
    const sent = await t.http().post('/conversation-messages-sms').set(acme.key).send({ conversation_id: conversation.id, content: 'Moved to 10:00' })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    await settle(t, acme.organization.id)
    expect(twilio.requests).toHaveLength(1)
    const [request] = twilio.requests
    expect(request.method).toBe('POST')
    expect(request.path).toBe(`/2010-04-01/Accounts/${account.config.account_sid}/Messages.json`)
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${account.config.account_sid}:${TWILIO_TOKEN}`).toString('base64')}`)
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(request.form).toEqual({ To: from, From: account.config.from_number, Body: 'Moved to 10:00', StatusCallback: `${account.webhook_url}/status` })
    const messageSid = (await t.http().get(`/conversation-messages-sms/${sent.body.id}`).set(acme.key)).body.provider_message_id
    expect(messageSid).toMatch(/^SM\d{32}$/)
    // The status callbacks come to the /status sibling (the StatusCallback we sent), or to the account's URL itself.
    for (const [status, sibling] of [['sent', true], ['delivered', false], ['sent', true]] as const) {
      const res = await post(twilioStatus(account.config.account_sid, account.config.from_number, from, messageSid, status), { status: sibling })
      expect(res.status).toBe(200)
    }
    await settle(t, acme.organization.id)
    const read = (await t.http().get(`/conversation-messages-sms/${sent.body.id}`).set(acme.key)).body
    expect(read.status).toBe('delivered')
    expect(read.delivered_at).not.toBeNull()
    // Our own number never became a contact.
    expect(await contactWithPhone(account.config.from_number)).toBeUndefined()
  })

  it('when Twilio reports the message undelivered, then it is failed with the ErrorCode', async () => {
    const from = uniqueE164()
    await incoming(from, sid(), 'Hello')
    const { conversation } = await messagesOfContact((await contactWithPhone(from)).id)
    const sent = (await t.http().post('/conversation-messages-sms').set(acme.key).send({ conversation_id: conversation.id, content: 'Lost' })).body
    await settle(t, acme.organization.id)
    const messageSid = (await t.db('conversation_messages').where({ id: sent.id, organization_id: acme.organization.id }).first()).provider_message_id
    await post(twilioStatus(account.config.account_sid, account.config.from_number, from, messageSid, 'undelivered', '30003'), { status: true })
    await settle(t, acme.organization.id)
    expect((await t.http().get(`/conversation-messages-sms/${sent.id}`).set(acme.key)).body).toMatchObject({ status: 'failed', error: { code: '30003', message: 'Twilio error 30003' } })
  })

  it("when Twilio refuses the number (400), then the message is failed with Twilio's code and message", async () => {
    const from = uniqueE164()
    await incoming(from, sid(), 'Hello')
    const { conversation } = await messagesOfContact((await contactWithPhone(from)).id)
    twilio.queue({ status: 400, body: { code: 21211, message: "The 'To' number +1555 is not a valid phone number.", more_info: 'https://www.twilio.com/docs/errors/21211', status: 400 } })
    const sent = (await t.http().post('/conversation-messages-sms').set(acme.key).send({ conversation_id: conversation.id, content: 'Nope' })).body
    await settle(t, acme.organization.id)
    expect(twilio.requests).toHaveLength(1)
    expect((await t.http().get(`/conversation-messages-sms/${sent.id}`).set(acme.key)).body).toMatchObject({
      status: 'failed', error: { code: '21211', message: "The 'To' number +1555 is not a valid phone number." }
    })
  })

  it('when files are attached, then they go as MediaUrl parameters (SMS has no 24-hour window)', async () => {
    const from = `+44${uniqueMobileDigits()}`
    const contact = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Never wrote', phone: from })).body
    const conversation = (await t.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: contact.id, channel_account_id: account.id })).body
    const files = await t.db('conversation_files').insert(['a.jpg', 'b.png'].map((name) => ({
      organization_id: acme.organization.id, conversation_id: conversation.id, storage_key: `test/${crypto.randomUUID()}/${name}`,
      file_name: name, file_type: 'image/jpeg', file_size: 3, url: `https://files.example.test/${name}`
    }))).returning('id')
    const sent = await t.http().post('/conversation-messages-sms').set(acme.key).send({ conversation_id: conversation.id, content: 'Photos', file_ids: files.map((f: any) => f.id) })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    await settle(t, acme.organization.id)
    expect(twilio.requests.at(-1)!.form).toMatchObject({ To: from, Body: 'Photos', MediaUrl: ['https://files.example.test/a.jpg', 'https://files.example.test/b.png'] })
  })
})
