import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { META_SECRET, NOT_META_IDS, connectMessenger, pathOf, uniqueDigits } from './fixtures.js'
import { fakeGraph, metaSignature, settle } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { messagingEntry, messengerDelivery, messengerRead, messengerText, metaJson } from './payloads.js'

describe('Messenger and Instagram', () => {
  let t: TestApp
  let graph: FakeProvider
  let acme: Tenant

  // One application (one embedded database) for both channels.
  beforeAll(async () => {
    graph = await fakeGraph()
    t = await startApp({ metaGraphUrl: `${graph.url}/v21.0`, messageRetryBaseMs: 0 })
    acme = await createTenant(t, 'Acme')
  })
  afterAll(async () => {
    await t.close()
    await graph.stop()
  })
  beforeEach(() => graph.reset())

  describe.each([
    { channel: 'messenger' as const, object: 'page' as const, idField: 'page_id', contactColumn: 'channel_messenger_user_id', token: 'EAAG-page-access-token' },
    { channel: 'instagram' as const, object: 'instagram' as const, idField: 'instagram_account_id', contactColumn: 'channel_instagram_user_id', token: 'IGQ-instagram-access-token' }
  ])('$channel', ({ channel, object, idField, contactColumn, token }) => {
    let account: any

    beforeAll(async () => {
      account = await connectMessenger(t, acme, channel)
    })

    const ownId = () => account.config[idField]
    /** What the Graph API received apart from profile look-ups. */
    const sends = () => graph.requests.filter((request) => request.method === 'POST')
    const deliver = async (messaging: Record<string, unknown>[]) => {
      const body = metaJson(messagingEntry(object, ownId(), messaging))
      const res = await t.http().post(pathOf(account.webhook_url)).set('Content-Type', 'application/json').set('X-Hub-Signature-256', metaSignature(body, META_SECRET)).send(body)
      expect(res.status, res.text).toBe(200)
      await settle(t, acme.organization.id)
    }
    const conversationOf = async (senderId: string) => {
      const contact = await t.db('contacts').where({ organization_id: acme.organization.id, [contactColumn]: senderId }).first()
      return t.db('conversations').where({ organization_id: acme.organization.id, contact_id: contact.id }).first()
    }
    const send = (body: Record<string, unknown>) => t.http().post(`/conversation-messages-transform-outgoing-${channel}`).set(acme.key).send(body)

    it('when the handshake token matches, then the challenge is answered; a bad signature is a 401', async () => {
      const ok = await t.http().get(pathOf(account.webhook_url)).query({ 'hub.mode': 'subscribe', 'hub.verify_token': account.verify_token, 'hub.challenge': 'CHALLENGE_ACCEPTED' })
      expect(ok.text).toBe('CHALLENGE_ACCEPTED')
      const body = metaJson(messagingEntry(object, ownId(), [messengerText(ownId(), uniqueDigits(), `m_${uniqueDigits()}`, 'x')]))
      const bad = await t.http().post(pathOf(account.webhook_url)).set('Content-Type', 'application/json').set('X-Hub-Signature-256', metaSignature(body, 'wrong')).send(body)
      expect(bad.status).toBe(401)
    })

    it('when a person writes, then a contact with their scoped id and a conversation are created; their second message joins it; echoes are not stored', async () => {
      const psid = uniqueDigits(16)
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Hello page')])
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Are you open?'), { sender: { id: ownId() }, recipient: { id: psid }, timestamp: Date.now(), message: { mid: `m_${uniqueDigits()}`, is_echo: true, text: 'echo' } }])
      const conversation = await conversationOf(psid)
      expect(conversation).toMatchObject({ channel, channel_account_id: account.id, unread_count: 2 })
      // Named from the User Profile API, asked once (for the new sender only), with the account's token.
      const lookups = graph.requests.filter((request) => request.method === 'GET')
      expect(lookups.map((request) => request.path)).toEqual([`/v21.0/${psid}?fields=${channel === 'messenger' ? 'first_name,last_name' : 'name,username'}`])
      expect(lookups[0].headers.authorization).toBe(`Bearer ${token}`)
      expect(await t.db('contacts').where({ organization_id: acme.organization.id, id: conversation.contact_id }).first()).toMatchObject({ first_name: 'Peter', last_name: 'Chang' })
      const messages = (await t.http().get(`/conversation-messages-${channel}`).set(acme.key).query({ conversation_id: conversation.id })).body.data
      expect(messages.map((m: any) => m.content)).toEqual(['Hello page', 'Are you open?'])
    })

    it.each(NOT_META_IDS)('when a sender id is %j, then the Graph API is asked nothing and nothing is stored; a valid sender in the same request is stored', async (senderId) => {
      const [refused, valid, psid] = [`m_${uniqueDigits()}`, `m_${uniqueDigits()}`, uniqueDigits(16)]
      await deliver([messengerText(ownId(), senderId, refused, 'From nowhere'), messengerText(ownId(), psid, valid, 'Hello page')])
      expect(graph.requests.map((request) => `${request.method} ${request.path}`)).toEqual([`GET /v21.0/${psid}?fields=${channel === 'messenger' ? 'first_name,last_name' : 'name,username'}`])
      const stored = (mid: string) => t.db('conversation_messages').where({ organization_id: acme.organization.id, provider_message_id: mid }).first()
      expect(await stored(refused)).toBeUndefined()
      expect(await t.db('contacts').where({ organization_id: acme.organization.id, [contactColumn]: senderId }).first()).toBeUndefined()
      expect(await stored(valid)).toMatchObject({ content: 'Hello page', direction: 'inbound' })
    })

    it('when the agent answers, then the Graph API receives {recipient, messaging_type RESPONSE, message} with the token, and the message is sent', async () => {
      const psid = uniqueDigits(16)
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Hi')])
      const conversation = await conversationOf(psid)
      const res = await send({ conversation_id: conversation.id, content: 'Yes, until 18:00' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      await settle(t, acme.organization.id)
      expect(sends()).toHaveLength(1)
      expect(sends()[0]).toMatchObject({ method: 'POST', path: `/v21.0/${ownId()}/messages` })
      expect(sends()[0].headers.authorization).toBe(`Bearer ${token}`)
      expect(sends()[0].json).toEqual({ recipient: { id: psid }, messaging_type: 'RESPONSE', message: { text: 'Yes, until 18:00' } })
      expect((await t.http().get(`/conversation-messages-${channel}/${res.body.id}`).set(acme.key)).body).toMatchObject({ status: 'sent', provider_message_id: expect.stringMatching(/^m_TEST\d+$/) })
    })

    it('when delivery and read watermarks arrive, then every outbound message up to that time moves, and later ones do not', async () => {
      const psid = uniqueDigits(16)
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Hi')])
      const conversation = await conversationOf(psid)
      const first = (await send({ conversation_id: conversation.id, content: 'One' })).body
      const second = (await send({ conversation_id: conversation.id, content: 'Two' })).body
      await settle(t, acme.organization.id)
      const sentAt = async (id: number) => new Date((await t.db('conversation_messages').where({ id, organization_id: acme.organization.id }).first()).sent_at).getTime()
      const watermark = await sentAt(second.id)
      const third = (await send({ conversation_id: conversation.id, content: 'Three' })).body
      await settle(t, acme.organization.id)
      await t.db('conversation_messages').where({ id: third.id, organization_id: acme.organization.id }).update({ sent_at: new Date(watermark + 60_000), created_at: new Date(watermark + 60_000) })
      await deliver([messengerDelivery(ownId(), psid, watermark)])
      const statuses = async () => (await t.db('conversation_messages').whereIn('id', [first.id, second.id, third.id]).where({ organization_id: acme.organization.id }).orderBy('id')).map((m: any) => m.status)
      expect(await statuses()).toEqual(['delivered', 'delivered', 'sent'])
      await deliver([messengerRead(ownId(), psid, watermark)])
      expect(await statuses()).toEqual(['read', 'read', 'sent'])
      await deliver([messengerDelivery(ownId(), psid, watermark + 120_000)])
      expect(await statuses()).toEqual(['read', 'read', 'delivered'])
    })

    it('when a file is sent, then it goes as an attachment by URL; text with a file, or a template, is a 400', async () => {
      const psid = uniqueDigits(16)
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Send me the menu')])
      const conversation = await conversationOf(psid)
      const [file] = await t.db('conversation_files').insert({
        organization_id: acme.organization.id, conversation_id: conversation.id, storage_key: `test/${uniqueDigits()}.jpg`,
        file_name: 'menu.jpg', file_type: 'image/jpeg', file_size: 3, url: 'https://files.example.test/menu.jpg'
      }).returning('*')
      const withText = await send({ conversation_id: conversation.id, content: 'Here', file_ids: [file.id] })
      expect(withText.status).toBe(400)
      expect(withText.body.errors).toHaveProperty('content')
      const template = await send({ conversation_id: conversation.id, template: { name: 'x', language: 'en', components: [] } })
      expect(template.status).toBe(400)
      expect(template.body.errors).toEqual({ template: 'templates are sent on WhatsApp only' })
      expect((await send({ conversation_id: conversation.id, file_ids: [file.id], content_type: 'image' })).status).toBe(201)
      await settle(t, acme.organization.id)
      expect(sends().at(-1)!.json).toEqual({ recipient: { id: psid }, messaging_type: 'RESPONSE', message: { attachment: { type: 'image', payload: { url: 'https://files.example.test/menu.jpg', is_reusable: true } } } })
    })

    it('when the person last wrote more than 24 hours ago, then a message is a 400 on content', async () => {
      const psid = uniqueDigits(16)
      await deliver([messengerText(ownId(), psid, `m_${uniqueDigits()}`, 'Hi')])
      const conversation = await conversationOf(psid)
      await t.db('conversations').where({ id: conversation.id, organization_id: acme.organization.id }).update({ last_inbound_at: t.db.raw("now() - interval '2 days'") })
      const res = await send({ conversation_id: conversation.id, content: 'Late' })
      expect(res.status).toBe(400)
      expect(res.body.errors.content).toMatch(/24-hour service window is closed/)
    })
  })
})
