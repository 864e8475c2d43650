import { beforeAll, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, createContact, createConversation, created } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('conversation messages', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const send = (tenant: Tenant, path: string, body: Record<string, unknown>) => t.http().post(`/${path}`).set(tenant.key).send(body)
  const conversationOf = async (tenant: Tenant, id: number) => (await t.http().get(`/conversations/${id}`).set(tenant.key)).body
  const messagesOf = async (tenant: Tenant, channel: string, query: Record<string, unknown>) => {
    const res = await t.http().get(`/conversation-messages-${channel}`).set(tenant.key).send({ query })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body
  }

  describe('the playground', () => {
    it('when a message is sent with a contact_id, then a playground conversation opens and the message is delivered at once', async () => {
      const contact = await createContact(t, acme)
      const res = await send(acme, 'conversation-messages-playground', { contact_id: contact.id, content: 'Hello Marie' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, conversation_id: expect.any(Number), channel: 'playground',
        channel_account_id: null, direction: 'outbound', sender_type: 'user', sender_user_id: acme.user.id, content: 'Hello Marie',
        content_type: 'text', file_ids: [], template: null, reply_to_message_id: null, provider_message_id: null, status: 'delivered',
        error: null, metadata: {}, sent_at: null, delivered_at: expect.stringMatching(ISO_MS), read_at: null,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      const conversation = await conversationOf(acme, res.body.conversation_id)
      expect(conversation).toMatchObject({
        channel: 'playground', contact_id: contact.id, status: 'open', unread_count: 0,
        last_message_at: res.body.created_at, last_message_preview: 'Hello Marie', last_inbound_at: null
      })
      const listed = await messagesOf(acme, 'playground', { conversation_id: res.body.conversation_id })
      expect(listed.data).toEqual([res.body])
    })

    it('when the customer side is played (inbound), then status received, unread_count grows and last_inbound_at is set; a reply marks it read', async () => {
      const conversation = await createConversation(t, acme)
      const first = created(await send(acme, 'conversation-messages-playground', { conversation_id: conversation.id, direction: 'inbound', content: 'Hi, is my order shipped?' }), 'inbound')
      expect(first).toMatchObject({ direction: 'inbound', sender_type: 'contact', sender_user_id: null, status: 'received' })
      created(await send(acme, 'conversation-messages-playground', { conversation_id: conversation.id, direction: 'inbound', content: 'Hello?' }), 'inbound')
      expect(await conversationOf(acme, conversation.id)).toMatchObject({ unread_count: 2, last_message_preview: 'Hello?' })
      expect((await conversationOf(acme, conversation.id)).last_inbound_at).toMatch(ISO_MS)
      const reply = created(await send(acme, 'conversation-messages-playground', { conversation_id: conversation.id, content: 'Yes, it left today', reply_to_message_id: first.id }), 'reply')
      expect(reply.reply_to_message_id).toBe(first.id)
      const after = await conversationOf(acme, conversation.id)
      expect(after).toMatchObject({ unread_count: 0, last_message_at: reply.created_at, last_message_preview: 'Yes, it left today' })
      const thread = await messagesOf(acme, 'playground', { conversation_id: conversation.id })
      expect(thread.data.map((m: any) => m.content)).toEqual(['Hi, is my order shipped?', 'Hello?', 'Yes, it left today'])
    })

    it('when the preview would be longer than 200 characters, then it keeps the first 200', async () => {
      const conversation = await createConversation(t, acme)
      created(await send(acme, 'conversation-messages-playground', { conversation_id: conversation.id, content: 'x'.repeat(250) }), 'long')
      expect((await conversationOf(acme, conversation.id)).last_message_preview).toBe('x'.repeat(200))
    })

    it("when the contact is another organization's, then 400 errors.contact_id and no conversation opens", async () => {
      const foreign = await createContact(t, globex)
      const before = await t.db('conversations').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const res = await send(acme, 'conversation-messages-playground', { contact_id: foreign.id, content: 'Hi' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ contact_id: 'must be a contact of this organization' })
      expect(await t.db('conversations').where({ organization_id: acme.organization.id }).count({ n: '*' })).toEqual(before)
    })
  })

  describe('sending on provider channels', () => {
    it("when a WhatsApp message is sent, then 201 status 'queued', and it is listed on /conversation-messages-whatsapp only", async () => {
      const conversation = await createConversation(t, acme, { channel: 'whatsapp', unread: true })
      const res = await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { conversation_id: conversation.id, content: 'Your order shipped' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ channel: 'whatsapp', direction: 'outbound', status: 'queued', delivered_at: null })
      expect(await conversationOf(acme, conversation.id)).toMatchObject({ unread_count: 0, last_message_at: res.body.created_at })
      expect((await messagesOf(acme, 'whatsapp', { conversation_id: conversation.id })).data.map((m: any) => m.id)).toEqual([res.body.id])
      expect((await t.http().get(`/conversation-messages-whatsapp/${res.body.id}`).set(acme.key)).body.id).toBe(res.body.id)
      expect((await t.http().get(`/conversation-messages-sms/${res.body.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().delete(`/conversation-messages-instagram/${res.body.id}`).set(acme.key)).status).toBe(404)
      expect((await messagesOf(acme, 'sms', { conversation_id: conversation.id })).total).toBe(0)
    })

    it.each([['instagram', 'queued'], ['messenger', 'queued'], ['webchat', 'delivered']])("when a %s message is sent through its transform-outgoing path, then it is %s on that channel", async (channel, status) => {
      const conversation = await createConversation(t, acme, { channel })
      const res = await send(acme, `conversation-messages-transform-outgoing-${channel}`, { conversation_id: conversation.id, content: 'Hello' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ channel, status })
      expect((await messagesOf(acme, channel, { conversation_id: conversation.id })).total).toBe(1)
    })

    it("when an SMS is sent on /conversation-messages-sms, then it is queued; a note is delivered and never queued", async () => {
      const conversation = await createConversation(t, acme, { channel: 'sms' })
      const sms = created(await send(acme, 'conversation-messages-sms', { conversation_id: conversation.id, content: 'Reminder: tomorrow 10:00' }), 'sms')
      expect(sms).toMatchObject({ channel: 'sms', status: 'queued' })
      const note = created(await send(acme, 'conversation-messages-sms', { conversation_id: conversation.id, content: 'Called her too', direction: 'note' }), 'note')
      expect(note).toMatchObject({ direction: 'note', sender_type: 'user', status: 'delivered' })
      expect((await messagesOf(acme, 'sms', { conversation_id: conversation.id, direction: 'note' })).data.map((m: any) => m.id)).toEqual([note.id])
    })

    it('when the path does not match the conversation\'s channel, then 400 errors.conversation_id naming the right path, and nothing is stored', async () => {
      const whatsapp = await createConversation(t, acme, { channel: 'whatsapp' })
      const playground = await createConversation(t, acme)
      const wrongSms = await send(acme, 'conversation-messages-sms', { conversation_id: whatsapp.id, content: 'Hi' })
      expect(wrongSms.status).toBe(400)
      expect(wrongSms.body.errors).toEqual({ conversation_id: 'is a whatsapp conversation: send it with POST /conversation-messages-transform-outgoing-whatsapp' })
      const wrongWhatsapp = await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { conversation_id: playground.id, content: 'Hi' })
      expect(wrongWhatsapp.body.errors).toEqual({ conversation_id: 'is a playground conversation: send it with POST /conversation-messages-playground' })
      const inbound = await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { conversation_id: whatsapp.id, content: 'Hi', direction: 'inbound' })
      expect(Object.keys(inbound.body.errors)).toEqual(['direction'])
      expect(await t.db('conversation_messages').whereIn('conversation_id', [whatsapp.id, playground.id]).where({ organization_id: acme.organization.id })).toEqual([])
    })

    it('when the conversation is blocked or deleted, then 400 errors.conversation_id and nothing is stored', async () => {
      const blocked = await createConversation(t, acme, { channel: 'sms', is_blocked: true })
      const res = await send(acme, 'conversation-messages-sms', { conversation_id: blocked.id, content: 'Hi' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ conversation_id: 'is blocked: unblock it to send messages' })
      const deleted = await createConversation(t, acme, { channel: 'sms' })
      await t.http().delete(`/conversations/${deleted.id}`).set(acme.key).expect(200)
      const gone = await send(acme, 'conversation-messages-sms', { conversation_id: deleted.id, content: 'Hi' })
      expect(gone.body.errors).toEqual({ conversation_id: 'must be a conversation of this organization' })
      expect(await t.db('conversation_messages').whereIn('conversation_id', [blocked.id, deleted.id]).where({ organization_id: acme.organization.id })).toEqual([])
      expect((await conversationOf(acme, blocked.id)).last_message_at).toBeNull()
    })

    it.each([
      [{}, 'content'],
      [{ content: '   ' }, 'content'],
      [{ content: 'x', content_type: 'template' }, 'template'],
      [{ template: { name: 'hello', language: 'en', components: [] }, content_type: 'text' }, 'template'],
      [{ content: 'x', file_ids: [2_000_000_000] }, 'file_ids'],
      [{ content: 'x', reply_to_message_id: 2_000_000_000 }, 'reply_to_message_id'],
      [{ content: 'x', sender_type: 'system' }, 'sender_type'],
      [{ content: 'x', status: 'read' }, 'status']
    ])('when the body is %j, then 400 with errors.%s', async (body, field) => {
      const conversation = await createConversation(t, acme, { channel: 'whatsapp' })
      const res = await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { conversation_id: conversation.id, ...body })
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([field])
    })

    it("when a template is sent, then content_type is 'template' and the template is stored", async () => {
      const conversation = await createConversation(t, acme, { channel: 'whatsapp' })
      const template = { name: 'order_update', language: 'en', components: [{ type: 'body', parameters: [{ type: 'text', text: '42' }] }] }
      const res = created(await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { conversation_id: conversation.id, template }), 'template')
      expect(res).toMatchObject({ content: '', content_type: 'template', template, status: 'queued' })
      expect((await t.http().get(`/conversation-messages-whatsapp/${res.id}`).set(acme.key)).body.template).toEqual(template)
    })
  })

  describe('predefined replies', () => {
    it('when a predefined message is sent, then its placeholders are filled from the contact, the sender and the organization; unknown ones stay', async () => {
      const contact = await createContact(t, acme, { first_name: 'Marie', last_name: 'Curie' })
      const conversation = await createConversation(t, acme, { contact_id: contact.id, channel: 'webchat' })
      const predefined = created(await t.http().post('/conversation-predefined-messages').set(acme.key).send({
        title: 'Greeting', shortcut: 'hi', channels: ['webchat'],
        content: 'Hello {{contact.first_name}} ({{ contact.full_name }}), {{user.first_name}} from {{organization.name}} here. {{contact.shoe_size}} {{last_name}}'
      }), 'predefined')
      const res = await send(acme, 'conversation-messages-transform-outgoing-webchat', { conversation_id: conversation.id, predefined_message_id: predefined.id })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.content).toBe(`Hello Marie (Marie Curie), Ada from ${acme.organization.name} here. {{contact.shoe_size}} {{last_name}}`)
      expect((await conversationOf(acme, conversation.id)).last_message_preview).toBe(res.body.content.slice(0, 200))
    })

    it("when the predefined message is not offered on the channel, is another organization's, or comes with content, then 400", async () => {
      const conversation = await createConversation(t, acme, { channel: 'sms' })
      const whatsappOnly = created(await t.http().post('/conversation-predefined-messages').set(acme.key).send({ title: 'WA', content: 'Hi', channels: ['whatsapp'] }), 'predefined')
      const foreign = created(await t.http().post('/conversation-predefined-messages').set(globex.key).send({ title: 'Theirs', content: 'Hi' }), 'predefined')
      const offChannel = await send(acme, 'conversation-messages-sms', { conversation_id: conversation.id, predefined_message_id: whatsappOnly.id })
      expect(offChannel.body.errors).toEqual({ predefined_message_id: 'is not offered on sms' })
      const crossTenant = await send(acme, 'conversation-messages-sms', { conversation_id: conversation.id, predefined_message_id: foreign.id })
      expect(crossTenant.body.errors).toEqual({ predefined_message_id: 'must be a predefined message of this organization' })
      const both = await send(acme, 'conversation-messages-sms', { conversation_id: conversation.id, predefined_message_id: whatsappOnly.id, content: 'x' })
      expect(Object.keys(both.body.errors)).toEqual(['content'])
      expect((await messagesOf(acme, 'sms', { conversation_id: conversation.id })).total).toBe(0)
    })
  })

  describe('reading and deleting', () => {
    let conversationId: number
    let sent: any[]

    beforeAll(async () => {
      const conversation = await createConversation(t, acme)
      conversationId = conversation.id
      sent = []
      for (let i = 0; i < 6; i++) {
        sent.push(created(await send(acme, 'conversation-messages-playground', { conversation_id: conversationId, content: `message ${i}`, direction: i % 2 ? 'inbound' : 'outbound' }), 'message'))
      }
    })

    it('when listed, then oldest first; keyset paging with created_at $lt and $gt walks the thread both ways', async () => {
      const all = await messagesOf(acme, 'playground', { conversation_id: conversationId })
      expect(all.data.map((m: any) => m.content)).toEqual(sent.map((m) => m.content))
      const latest = await messagesOf(acme, 'playground', { conversation_id: conversationId, $sort: { created_at: -1 }, $limit: 2 })
      expect(latest.data.map((m: any) => m.id)).toEqual([sent[5].id, sent[4].id])
      const older = await messagesOf(acme, 'playground', { conversation_id: conversationId, $sort: { created_at: -1 }, $limit: 2, created_at: { $lt: latest.data[1].created_at } })
      expect(older.data.map((m: any) => m.id)).toEqual([sent[3].id, sent[2].id])
      const newer = await messagesOf(acme, 'playground', { conversation_id: conversationId, created_at: { $gt: sent[3].created_at } })
      expect(newer.data.map((m: any) => m.id)).toEqual([sent[4].id, sent[5].id])
      const inbound = await messagesOf(acme, 'playground', { conversation_id: conversationId, direction: 'inbound', status: 'received' })
      expect(inbound.data.map((m: any) => m.id)).toEqual([sent[1].id, sent[3].id, sent[5].id])
      expect((await messagesOf(acme, 'playground', { conversation_id: conversationId, $limit: 200 })).limit).toBe(50)
    })

    it('when the inbox is searched by message text, then the conversation is found; when sorted by default, the latest activity comes first', async () => {
      const list = await t.http().get('/conversations').set(acme.key).send({ query: { searchTerm: 'MESSAGE 4' } })
      expect(list.body.data.map((c: any) => c.id)).toEqual([conversationId])
      const other = await createConversation(t, acme)
      created(await send(acme, 'conversation-messages-playground', { conversation_id: other.id, content: 'newest' }), 'message')
      const inbox = await t.http().get('/conversations').set(acme.key).send({ query: { id: { $in: [conversationId, other.id] } } })
      expect(inbox.body.data.map((c: any) => c.id)).toEqual([other.id, conversationId])
    })

    it('when a message is deleted, then it comes back with deleted_at and is gone from the thread', async () => {
      const message = created(await send(acme, 'conversation-messages-playground', { conversation_id: conversationId, content: 'oops' }), 'message')
      const removed = await t.http().delete(`/conversation-messages-playground/${message.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toBe(removed.body.updated_at)
      expect((await t.http().get(`/conversation-messages-playground/${message.id}`).set(acme.key)).status).toBe(404)
      expect((await messagesOf(acme, 'playground', { conversation_id: conversationId, id: message.id })).total).toBe(0)
    })

    it('when the conversation is deleted, then its messages disappear from the message lists', async () => {
      const conversation = await createConversation(t, acme)
      created(await send(acme, 'conversation-messages-playground', { conversation_id: conversation.id, content: 'soon gone' }), 'message')
      expect((await messagesOf(acme, 'playground', { conversation_id: conversation.id })).total).toBe(1)
      await t.http().delete(`/conversations/${conversation.id}`).set(acme.key).expect(200)
      expect((await messagesOf(acme, 'playground', { conversation_id: conversation.id })).total).toBe(0)
    })
  })

  describe('other organizations', () => {
    it("when another organization's message is read or deleted by id, then 404; naming its organization, then 403; sending into its conversation, then 400", async () => {
      const theirs = await createConversation(t, globex, { channel: 'sms' })
      const message = created(await send(globex, 'conversation-messages-sms', { conversation_id: theirs.id, content: 'private' }), 'message')
      expect((await t.http().get(`/conversation-messages-sms/${message.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().delete(`/conversation-messages-sms/${message.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get('/conversation-messages-sms').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
      expect((await t.http().get('/conversation-messages-sms').set(acme.key).send({ query: { conversation_id: theirs.id } })).body.total).toBe(0)
      const into = await send(acme, 'conversation-messages-sms', { conversation_id: theirs.id, content: 'sneaky' })
      expect(into.status).toBe(400)
      expect(into.body.errors).toEqual({ conversation_id: 'must be a conversation of this organization' })
      const named = await send(acme, 'conversation-messages-transform-outgoing-whatsapp', { organization_id: globex.organization.id, conversation_id: theirs.id, content: 'x' })
      expect(named.status).toBe(403)
      expect((await messagesOf(globex, 'sms', { conversation_id: theirs.id })).data.map((m: any) => m.content)).toEqual(['private'])
    })

    it("when a reply points at another conversation's message, then 400 errors.reply_to_message_id", async () => {
      const mine = await createConversation(t, acme)
      const other = await createConversation(t, acme)
      const elsewhere = created(await send(acme, 'conversation-messages-playground', { conversation_id: other.id, content: 'there' }), 'message')
      const res = await send(acme, 'conversation-messages-playground', { conversation_id: mine.id, content: 'here', reply_to_message_id: elsewhere.id })
      expect(res.body.errors).toEqual({ reply_to_message_id: 'must be a message of this conversation' })
    })

    it('when a member sends, then the message names them as sender', async () => {
      const member = await addMember(t, acme)
      const conversation = await createConversation(t, acme)
      const res = await t.http().post('/conversation-messages-playground').set(member.bearer)
        .send({ organization_id: acme.organization.id, conversation_id: conversation.id, content: 'On it' })
      expect(res.status).toBe(201)
      expect(res.body.sender_user_id).toBe(member.user.id)
    })
  })
})
