import { Writable } from 'node:stream'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/logger.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS } from '../conversations/fixtures.js'
import { META_SECRET, NOT_META_IDS, connectWhatsApp, pathOf, uniqueDigits, uniqueMobileDigits } from './fixtures.js'
import { fakeGraph, metaSignature, settle } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { metaJson, whatsappButtonReply, whatsappImage, whatsappLocation, whatsappStatus, whatsappText } from './payloads.js'

describe('WhatsApp (Cloud API)', () => {
  let t: TestApp
  let graph: FakeProvider
  let acme: Tenant
  let account: any
  // Every log line of the app, at debug level: credentials must never appear in one.
  let logged = ''

  beforeAll(async () => {
    graph = await fakeGraph()
    const sink = new Writable({ write: (chunk, _encoding, done) => { logged += chunk.toString(); done() } })
    t = await startApp({ metaGraphUrl: `${graph.url}/v21.0`, messageRetryBaseMs: 0, messageMaxAttempts: 3, logger: createLogger('debug', 'json', sink) })
    acme = await createTenant(t, 'Acme')
    account = await connectWhatsApp(t, acme)
  })
  afterAll(async () => {
    await t.close()
    await graph.stop()
  })
  beforeEach(() => graph.reset())

  const phoneNumberId = () => account.config.phone_number_id
  /** POSTs a payload to the account's webhook, signed with its app secret unless told otherwise. */
  const deliver = (payload: unknown, { secret = META_SECRET, signature, target = account }: { secret?: string; signature?: string | null; target?: any } = {}) => {
    const body = metaJson(payload)
    const req = t.http().post(pathOf(target.webhook_url)).set('Content-Type', 'application/json')
    if (signature !== null) req.set('X-Hub-Signature-256', signature ?? metaSignature(body, secret))
    return req.send(body)
  }
  const inbound = async (payload: unknown) => {
    const res = await deliver(payload)
    expect(res.status, res.text).toBe(200)
    await settle(t, acme.organization.id)
  }
  const messagesOf = async (conversationId: number) =>
    (await t.http().get('/conversation-messages-whatsapp').set(acme.key).query({ conversation_id: conversationId, $limit: 50 })).body.data
  const contactsWith = (waId: string) => t.db('contacts').where({ organization_id: acme.organization.id, channel_whatsapp_wa_id: waId })
  const conversationOfWaId = async (waId: string) => {
    const [contact] = await contactsWith(waId)
    return t.db('conversations').where({ organization_id: acme.organization.id, contact_id: contact.id }).first()
  }

  describe('the subscription handshake', () => {
    it('when hub.verify_token matches, then 200 with hub.challenge as plain text; otherwise 403', async () => {
      const ok = await t.http().get(pathOf(account.webhook_url)).query({ 'hub.mode': 'subscribe', 'hub.verify_token': account.verify_token, 'hub.challenge': '1158201444' })
      expect(ok.status).toBe(200)
      expect(ok.headers['content-type']).toMatch(/^text\/plain/)
      expect(ok.text).toBe('1158201444')
      const wrong = await t.http().get(pathOf(account.webhook_url)).query({ 'hub.mode': 'subscribe', 'hub.verify_token': 'guess', 'hub.challenge': '1158201444' })
      expect(wrong.status).toBe(403)
      expect(wrong.text).not.toContain('1158201444')
      const unknown = await t.http().get(`/webhooks/whatsapp/${'x'.repeat(43)}`).query({ 'hub.mode': 'subscribe', 'hub.verify_token': account.verify_token, 'hub.challenge': '1' })
      expect(unknown.status).toBe(404)
    })
  })

  describe('signatures', () => {
    it('when X-Hub-Signature-256 is missing, wrong, or made with another secret, then 401 and nothing is stored', async () => {
      const waId = `1${uniqueDigits(11)}`
      const payload = whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Hello?')
      const before = await t.db('outbox_jobs').where({ organization_id: acme.organization.id }).count({ n: '*' })
      for (const attempt of [{ signature: null }, { signature: 'sha256=0000' }, { secret: 'another-app-secret' }, { signature: metaSignature(JSON.stringify(payload), META_SECRET).toUpperCase() }]) {
        const res = await deliver(payload, attempt)
        expect(res.status).toBe(401)
        expect(res.body).toMatchObject({ name: 'NotAuthenticated', code: 401 })
      }
      await settle(t, acme.organization.id)
      expect(await t.db('outbox_jobs').where({ organization_id: acme.organization.id }).count({ n: '*' })).toEqual(before)
      expect(await contactsWith(waId)).toHaveLength(0)
    })

    it('when the body carries escaped non-ASCII characters and slashes, then the signature over the raw bytes verifies and the text is stored decoded', async () => {
      const waId = `1${uniqueDigits(11)}`
      await inbound(whatsappText(phoneNumberId(), { waId, name: 'Zoë Müller' }, `wamid.${uniqueDigits()}`, 'Ça marche? 1/2 — 日本'))
      const conversation = await conversationOfWaId(waId)
      expect((await messagesOf(conversation.id))[0].content).toBe('Ça marche? 1/2 — 日本')
      expect((await contactsWith(waId))[0]).toMatchObject({ first_name: 'Zoë', last_name: 'Müller' })
    })
  })

  describe('inbound messages', () => {
    it('when a customer writes for the first time, then a contact (profile name, wa_id, phone) and an open conversation are created with the message received', async () => {
      const waId = `1${uniqueDigits(11)}`
      const id = `wamid.${uniqueDigits()}`
      const events: string[] = []
      const record = (name: string) => (data: any) => { if (data.organization_id === acme.organization.id) events.push(name) }
      t.app.service('conversation-messages-whatsapp').on('created', record('message created'))
      t.app.service('conversations').on('created', record('conversation created'))
      t.app.service('conversations').on('patched', record('conversation patched'))
      await inbound(whatsappText(phoneNumberId(), { waId, name: 'Sheena Nelson' }, id, 'My order has not arrived'))
      // The realtime events the dashboards of the organization receive (test/conversations/realtime.test.ts covers their delivery).
      expect(events).toEqual(['conversation created', 'message created', 'conversation patched'])
      const [contact] = await contactsWith(waId)
      expect(contact).toMatchObject({ first_name: 'Sheena', last_name: 'Nelson', phone: `+${waId}`, channel_whatsapp_wa_id: waId })
      const conversation = (await t.http().get('/conversations').set(acme.key).query({ contact_id: contact.id })).body.data
      expect(conversation).toHaveLength(1)
      expect(conversation[0]).toMatchObject({
        channel: 'whatsapp', channel_account_id: account.id, status: 'open', unread_count: 1, last_message_preview: 'My order has not arrived'
      })
      expect(conversation[0].last_inbound_at).toMatch(ISO_MS)
      const [message] = await messagesOf(conversation[0].id)
      expect(message).toMatchObject({
        direction: 'inbound', sender_type: 'contact', status: 'received', provider_message_id: id, channel_account_id: account.id,
        content: 'My order has not arrived', content_type: 'text', metadata: {}
      })
      expect(conversation[0].last_message_at).toBe(message.created_at)
    })

    it('when the same customer writes again, then the message joins the open conversation; once resolved, the next one reopens it', async () => {
      const waId = `1${uniqueDigits(11)}`
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'First'))
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Second'))
      const conversation = await conversationOfWaId(waId)
      expect((await messagesOf(conversation.id)).map((m: any) => m.content)).toEqual(['First', 'Second'])
      expect(conversation.unread_count).toBe(2)
      expect((await t.http().patch(`/conversations/${conversation.id}`).set(acme.key).send({ status: 'resolved' })).status).toBe(200)
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Third'))
      const reopened = await t.http().get(`/conversations/${conversation.id}`).set(acme.key)
      expect(reopened.body).toMatchObject({ status: 'open', last_message_preview: 'Third', unread_count: 3 })
      expect(await t.db('conversations').where({ organization_id: acme.organization.id, contact_id: conversation.contact_id })).toHaveLength(1)
      expect(await contactsWith(waId)).toHaveLength(1)
    })

    it('when a snoozed conversation receives a message, then it is reopened and its snooze cleared', async () => {
      const waId = `1${uniqueDigits(11)}`
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Hi'))
      const conversation = await conversationOfWaId(waId)
      await t.http().patch(`/conversations/${conversation.id}`).set(acme.key).send({ status: 'snoozed', snoozed_until: new Date(Date.now() + 3_600_000).toISOString() })
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Still there?'))
      expect((await t.http().get(`/conversations/${conversation.id}`).set(acme.key)).body).toMatchObject({ status: 'open', snoozed_until: null })
    })

    it('when an existing contact has the phone number, then they are matched by phone (E.164) and gain the wa_id', async () => {
      // Saved as a national number, with its trunk 0.
      const digits = uniqueMobileDigits()
      const known = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Known', phone: `0${digits}`, phone_country_code: '+44' }).expect(201)).body
      await inbound(whatsappText(phoneNumberId(), { waId: `44${digits}`, name: 'Someone Else' }, `wamid.${uniqueDigits()}`, 'Hello'))
      const [contact] = await contactsWith(`44${digits}`)
      expect(contact.id).toBe(known.id)
      expect(contact.first_name).toBe('Known')
    })

    it('when the sender has a username (no wa_id, a business-scoped user id), then they are created and matched again by that id', async () => {
      const userId = `US.${uniqueDigits(19)}`
      await inbound(whatsappText(phoneNumberId(), { userId, name: 'Hidden Number' }, `wamid.${uniqueDigits()}`, 'One'))
      await inbound(whatsappText(phoneNumberId(), { userId }, `wamid.${uniqueDigits()}`, 'Two'))
      const contacts = await t.db('contacts').where({ organization_id: acme.organization.id, channel_whatsapp_user_id: userId })
      expect(contacts).toHaveLength(1)
      expect(contacts[0]).toMatchObject({ first_name: 'Hidden', phone: null, channel_whatsapp_wa_id: null })
      const conversation = await t.db('conversations').where({ organization_id: acme.organization.id, contact_id: contacts[0].id }).first()
      expect((await messagesOf(conversation.id)).map((m: any) => m.content)).toEqual(['One', 'Two'])
    })

    it.each(NOT_META_IDS)('when a wa_id is %j, then nothing is stored, the webhook is answered 200 and a line says why; a valid sender in the same request is stored', async (waId) => {
      const [refused, valid, validWaId] = [`wamid.${uniqueDigits()}`, `wamid.${uniqueDigits()}`, `1${uniqueDigits(11)}`]
      const payload = whatsappText(phoneNumberId(), { waId }, refused, 'From nowhere') as any
      payload.entry.push(...whatsappText(phoneNumberId(), { waId: validWaId }, valid, 'Hello').entry)
      await inbound(payload)
      const stored = (id: string) => t.db('conversation_messages').where({ organization_id: acme.organization.id, provider_message_id: id }).first()
      expect(await stored(refused)).toBeUndefined()
      expect(await contactsWith(waId)).toEqual([])
      expect(await stored(valid)).toMatchObject({ content: 'Hello', direction: 'inbound' })
      expect(logged.split('\n').filter(Boolean).map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({
        msg: 'channels: an inbound event was skipped', channel_account_id: account.id, reason: `the sender id ${JSON.stringify(waId)} is not a Meta id`
      }))
    })

    it('when media, a location or an interactive reply arrives, then its content type and provider details are stored as metadata', async () => {
      const waId = `1${uniqueDigits(11)}`
      await inbound(whatsappImage(phoneNumberId(), waId, `wamid.${uniqueDigits()}`))
      await inbound(whatsappLocation(phoneNumberId(), waId, `wamid.${uniqueDigits()}`))
      await inbound(whatsappButtonReply(phoneNumberId(), waId, `wamid.${uniqueDigits()}`))
      const messages = await messagesOf((await conversationOfWaId(waId)).id)
      expect(messages.map((m: any) => [m.content_type, m.content])).toEqual([
        ['image', 'The broken part'], ['location', 'Main Office, 1 Hacker Way, Menlo Park, CA 94025'], ['text', 'Yes, please']
      ])
      expect(messages[0].metadata).toEqual({ media: { type: 'image', id: '1003383421387256', mime_type: 'image/jpeg', sha256: 'xqzX1Z3Yf9Qw3Jg4vWz8Jv2cJpQz1sT3' } })
      expect(messages[1].metadata.location).toEqual({ latitude: 37.483307, longitude: -122.148981, name: 'Main Office', address: '1 Hacker Way, Menlo Park, CA 94025' })
      expect(messages[2].metadata).toMatchObject({ interactive: { type: 'button_reply', id: 'unique-postback-id', title: 'Yes, please' } })
    })
  })

  describe('exactly once', () => {
    it('when the same payload is delivered twice, then one message is stored', async () => {
      const waId = `1${uniqueDigits(11)}`
      const payload = whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Once')
      await inbound(payload)
      await inbound(payload)
      const conversation = await conversationOfWaId(waId)
      expect(await messagesOf(conversation.id)).toHaveLength(1)
      expect(conversation.unread_count).toBe(1)
    })

    it('when one payload is delivered 5 times concurrently, then one contact, one conversation and one message are stored', async () => {
      const waId = `1${uniqueDigits(11)}`
      const payload = whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Concurrent')
      const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(payload)))
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200, 200])
      // Five workers at once, as five instances would run them.
      await Promise.all(Array.from({ length: 5 }, () => t.app.get('outbox').deliverDue()))
      await settle(t, acme.organization.id)
      expect(await contactsWith(waId)).toHaveLength(1)
      const conversations = await t.db('conversations').where({ organization_id: acme.organization.id, contact_id: (await contactsWith(waId))[0].id })
      expect(conversations).toHaveLength(1)
      expect(await messagesOf(conversations[0].id)).toHaveLength(1)
      expect(conversations[0].unread_count).toBe(1)
    })
  })

  describe('inactive and deleted accounts', () => {
    it('when the account is inactive or deleted, then a signed payload is answered 200 and ignored', async () => {
      const other = await connectWhatsApp(t, acme)
      await t.http().patch(`/channel-accounts/${other.id}`).set(acme.key).send({ is_active: false })
      const waId = `1${uniqueDigits(11)}`
      const payload = whatsappText(other.config.phone_number_id, { waId }, `wamid.${uniqueDigits()}`, 'Anyone?')
      expect((await deliver(payload, { target: other })).status).toBe(200)
      await t.http().delete(`/channel-accounts/${other.id}`).set(acme.key)
      expect((await deliver(payload, { target: other })).status).toBe(200)
      await settle(t, acme.organization.id)
      expect(await contactsWith(waId)).toHaveLength(0)
    })
  })

  describe('outbound', () => {
    /** A conversation whose customer wrote just now (the 24-hour window is open). */
    const openWindow = async () => {
      const waId = `1${uniqueDigits(11)}`
      await inbound(whatsappText(phoneNumberId(), { waId }, `wamid.${uniqueDigits()}`, 'Hello'))
      return { waId, conversation: await conversationOfWaId(waId) }
    }
    const send = (body: Record<string, unknown>) => t.http().post('/conversation-messages-transform-outgoing-whatsapp').set(acme.key).send(body)
    const messageRow = (id: number) => t.db('conversation_messages').where({ organization_id: acme.organization.id, id }).first()

    it('when the agent answers, then the Graph API receives exactly the documented request and the message becomes sent with its wamid', async () => {
      const { waId, conversation } = await openWindow()
      const res = await send({ conversation_id: conversation.id, content: 'It ships today' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.status).toBe('queued')
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(1)
      const [request] = graph.requests
      expect(request.method).toBe('POST')
      expect(request.path).toBe(`/v21.0/${phoneNumberId()}/messages`)
      expect(request.headers.authorization).toBe('Bearer EAAG-whatsapp-access-token')
      expect(request.headers['content-type']).toBe('application/json')
      expect(request.json).toEqual({ messaging_product: 'whatsapp', recipient_type: 'individual', to: waId, type: 'text', text: { preview_url: false, body: 'It ships today' } })
      const read = await t.http().get(`/conversation-messages-whatsapp/${res.body.id}`).set(acme.key)
      expect(read.body).toMatchObject({ status: 'sent', provider_message_id: expect.stringMatching(/^wamid\.TEST\d+$/), error: null })
      expect(read.body.sent_at).toMatch(ISO_MS)
    })

    it('when delivery and read statuses arrive, then they show on the message; a late delivered after read changes nothing', async () => {
      const { waId, conversation } = await openWindow()
      const res = await send({ conversation_id: conversation.id, content: 'Tracking: 123' })
      await settle(t, acme.organization.id)
      const wamid = (await messageRow(res.body.id)).provider_message_id
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'delivered'))
      let read = (await t.http().get(`/conversation-messages-whatsapp/${res.body.id}`).set(acme.key)).body
      expect(read).toMatchObject({ status: 'delivered', read_at: null })
      expect(read.delivered_at).toMatch(ISO_MS)
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'read'))
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'delivered'))
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'sent'))
      read = (await t.http().get(`/conversation-messages-whatsapp/${res.body.id}`).set(acme.key)).body
      expect(read.status).toBe('read')
      expect(read.read_at).toMatch(ISO_MS)
    })

    it('when a status arrives before the send call has returned the id, then it is kept and applied once the id is known', async () => {
      const { waId, conversation } = await openWindow()
      // The provider will answer with this id; its 'delivered' arrives first.
      const wamid = `wamid.EARLY${uniqueDigits()}`
      graph.queue({ status: 200, body: { messaging_product: 'whatsapp', contacts: [{ input: waId, wa_id: waId }], messages: [{ id: wamid }] } })
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'delivered'))
      const res = await send({ conversation_id: conversation.id, content: 'Early bird' })
      await settle(t, acme.organization.id)
      const row = await messageRow(res.body.id)
      expect(row).toMatchObject({ provider_message_id: wamid, status: 'delivered' })
      expect(row.delivered_at).toBeInstanceOf(Date)
    })

    it("when a 'failed' status arrives, then the message is failed with the provider's error {code, message}", async () => {
      const { waId, conversation } = await openWindow()
      const res = await send({ conversation_id: conversation.id, content: 'Will fail' })
      await settle(t, acme.organization.id)
      const wamid = (await messageRow(res.body.id)).provider_message_id
      await inbound(whatsappStatus(phoneNumberId(), waId, wamid, 'failed', [{ code: 131050, title: 'Unable to deliver the message', message: 'Unable to deliver the message', error_data: { details: 'The user has stopped marketing messages' } }]))
      expect(await messageRow(res.body.id)).toMatchObject({ status: 'failed', error: { code: '131050', message: 'The user has stopped marketing messages' } })
    })

    it('when the Graph API answers 500, then the job is retried and the message is sent once', async () => {
      const { conversation } = await openWindow()
      graph.queue({ status: 500, body: { error: { message: 'An unknown error has occurred.', type: 'OAuthException', code: 1, fbtrace_id: 'A1' } } })
      const res = await send({ conversation_id: conversation.id, content: 'Second time lucky' })
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(2)
      expect(graph.requests[0].json).toEqual(graph.requests[1].json)
      expect(await messageRow(res.body.id)).toMatchObject({ status: 'sent', provider_message_id: expect.stringMatching(/^wamid\.TEST\d+$/), error: null })
      const job = await t.db('outbox_jobs').where({ topic: 'channel-message', organization_id: acme.organization.id }).whereRaw("payload->>'message_id' = ?", [String(res.body.id)]).first()
      expect(job).toMatchObject({ status: 'sent', attempts: 2 })
    })

    it('when the Graph API answers 429 with Retry-After, then the next attempt waits at least that long', async () => {
      const { conversation } = await openWindow()
      graph.queue({ status: 429, body: { error: { message: '(#130429) Rate limit hit', code: 130429 } }, headers: { 'Retry-After': '120' } })
      const res = await send({ conversation_id: conversation.id, content: 'Throttled' })
      await settle(t, acme.organization.id)
      const job = await t.db('outbox_jobs').where({ topic: 'channel-message', organization_id: acme.organization.id }).whereRaw("payload->>'message_id' = ?", [String(res.body.id)]).first()
      expect(job.status).toBe('pending')
      expect(new Date(job.next_attempt_at).getTime() - new Date(job.updated_at).getTime()).toBeGreaterThanOrEqual(119_000)
      expect((await messageRow(res.body.id)).status).toBe('queued')
      await t.db('outbox_jobs').where({ id: job.id }).update({ next_attempt_at: t.db.fn.now() })
      await settle(t, acme.organization.id)
      expect(await messageRow(res.body.id)).toMatchObject({ status: 'sent' })
      expect(graph.requests).toHaveLength(2)
    })

    it("when the Graph API refuses with a 4xx, then the message is failed at once with the provider's {code, message}, never retried", async () => {
      const { conversation } = await openWindow()
      graph.queue({ status: 400, body: { error: { message: '(#131030) Recipient phone number not in allowed list', type: 'OAuthException', code: 131030, fbtrace_id: 'Az8or2yhqkZfEZ-_4Qn_Bam' } } })
      const res = await send({ conversation_id: conversation.id, content: 'Not allowed' })
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(1)
      const read = (await t.http().get(`/conversation-messages-whatsapp/${res.body.id}`).set(acme.key)).body
      expect(read).toMatchObject({ status: 'failed', provider_message_id: null, error: { code: '131030', message: '(#131030) Recipient phone number not in allowed list' } })
    })

    it('when every attempt fails (5xx), then after MESSAGE_MAX_ATTEMPTS the message is failed', async () => {
      const { conversation } = await openWindow()
      const down = { status: 503, body: { error: { message: 'Service temporarily unavailable', code: 2 } } }
      graph.queue(down, down, down)
      const res = await send({ conversation_id: conversation.id, content: 'Nobody home' })
      await settle(t, acme.organization.id)
      const job = await t.db('outbox_jobs').where({ topic: 'channel-message', organization_id: acme.organization.id }).whereRaw("payload->>'message_id' = ?", [String(res.body.id)]).first()
      expect(graph.requests, JSON.stringify(job)).toHaveLength(3)
      expect(await messageRow(res.body.id)).toMatchObject({ status: 'failed', error: { code: 'delivery_failed' } })
    })

    it('when the customer last wrote more than 24 hours ago (or never), then a free-form message is a 400 on content; a template is sent', async () => {
      const { waId, conversation } = await openWindow()
      await t.db('conversations').where({ id: conversation.id, organization_id: acme.organization.id }).update({ last_inbound_at: t.db.raw("now() - interval '25 hours'") })
      const late = await send({ conversation_id: conversation.id, content: 'Are you there?' })
      expect(late.status).toBe(400)
      expect(late.body.errors.content).toMatch(/24-hour service window is closed/)
      const template = { name: 'order_update', language: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: '123' }] }] }
      const res = await send({ conversation_id: conversation.id, template })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      await settle(t, acme.organization.id)
      expect(graph.requests.at(-1)!.json).toEqual({ messaging_product: 'whatsapp', recipient_type: 'individual', to: waId, type: 'template', template: { name: 'order_update', language: { code: 'en_US' }, components: template.components } })
      // Our own messages do not reopen the window.
      expect((await send({ conversation_id: conversation.id, content: 'Still closed' })).status).toBe(400)
      // A contact who never wrote: a new conversation opened by the team.
      const contact = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Cold', phone: `+44${uniqueMobileDigits()}` })).body
      const cold = (await t.http().post('/conversations').set(acme.key).send({ channel: 'whatsapp', contact_id: contact.id, channel_account_id: account.id })).body
      expect((await send({ conversation_id: cold.id, content: 'Hi!' })).status).toBe(400)
      expect((await send({ conversation_id: cold.id, template })).status).toBe(201)
      await settle(t, acme.organization.id)
      expect(graph.requests.at(-1)!.json.to).toBe(contact.phone.slice(1))
    })

    it('when a file is attached, then it is sent as media by its URL with the text as caption', async () => {
      const { waId, conversation } = await openWindow()
      const [file] = await t.db('conversation_files').insert({
        organization_id: acme.organization.id, conversation_id: conversation.id, storage_key: `test/${uniqueDigits()}.pdf`,
        file_name: 'invoice.pdf', file_type: 'application/pdf', file_size: 10, url: 'https://files.example.test/invoice.pdf'
      }).returning('*')
      const res = await send({ conversation_id: conversation.id, content: 'Your invoice', file_ids: [file.id] })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      await settle(t, acme.organization.id)
      expect(graph.requests.at(-1)!.json).toEqual({
        messaging_product: 'whatsapp', recipient_type: 'individual', to: waId, type: 'document',
        document: { link: 'https://files.example.test/invoice.pdf', caption: 'Your invoice', filename: 'invoice.pdf' }
      })
    })

    it.runIf(Boolean(process.env.DATABASE_URL))('when two instances run their workers at once on a slow provider, then the message is sent once', async () => {
      const other = await startApp({ metaGraphUrl: `${graph.url}/v21.0`, messageRetryBaseMs: 0 })
      try {
        const { conversation } = await openWindow()
        graph.queue({ status: 200, body: { messaging_product: 'whatsapp', contacts: [], messages: [{ id: `wamid.SLOW${uniqueDigits()}` }] }, delayMs: 300 })
        const res = await send({ conversation_id: conversation.id, content: 'Only once' })
        await Promise.all([other.app.get('outbox').deliverDue(), t.app.get('outbox').deliverDue(), other.app.get('outbox').deliverDue()])
        await settle(t, acme.organization.id)
        expect(graph.requests).toHaveLength(1)
        expect((await messageRow(res.body.id)).status).toBe('sent')
      } finally {
        await other.close()
      }
    })

    it('when a worker died after the provider took the message and its lease ran out, then the job run again sends nothing', async () => {
      const { conversation } = await openWindow()
      const res = await send({ conversation_id: conversation.id, content: 'Taken once' })
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(1)
      // As if the worker had stored the provider id and died before closing its job: running, lease expired.
      const job = t.db('outbox_jobs').where({ topic: 'channel-message', organization_id: acme.organization.id }).whereRaw("payload->>'message_id' = ?", [String(res.body.id)])
      await job.clone().update({ status: 'running', next_attempt_at: t.db.raw("now() - interval '1 second'") })
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(1)
      expect(await job.clone().first()).toMatchObject({ status: 'sent', attempts: 2 })
    })

    it('when a job is running under a live lease, then no other pass takes it', async () => {
      const { conversation } = await openWindow()
      graph.queue({ status: 200, body: { messaging_product: 'whatsapp', contacts: [], messages: [{ id: `wamid.LEASE${uniqueDigits()}` }] }, delayMs: 300 })
      const res = await send({ conversation_id: conversation.id, content: 'Leased' })
      const job = t.db('outbox_jobs').where({ topic: 'channel-message', organization_id: acme.organization.id }).whereRaw("payload->>'message_id' = ?", [String(res.body.id)])
      for (let i = 0; i < 50 && (await job.clone().first()).status !== 'running'; i++) await new Promise((resolve) => setTimeout(resolve, 10))
      expect((await t.app.get('outbox').deliverDue()).sent).toBe(0)
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(1)
    })

    it('when everything above has run (webhooks, sends, failures), then no log line holds the access token, the app secret or a webhook key', async () => {
      expect(logged.length).toBeGreaterThan(1000)
      expect(logged).toContain('"url":"/webhooks/whatsapp/[REDACTED]"')
      for (const secret of ['EAAG-whatsapp-access-token', META_SECRET, new URL(account.webhook_url).pathname.split('/').pop()!]) {
        expect(logged).not.toContain(secret)
      }
    })

    it('when a note is added, then nothing is sent', async () => {
      const { conversation } = await openWindow()
      const res = await send({ conversation_id: conversation.id, content: 'Internal', direction: 'note' })
      expect(res.body.status).toBe('delivered')
      await settle(t, acme.organization.id)
      expect(graph.requests).toHaveLength(0)
    })
  })
})
