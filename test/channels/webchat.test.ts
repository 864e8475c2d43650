import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import { ISO_MS } from '../conversations/fixtures.js'
import { connectWebchat } from './fixtures.js'

describe('web chat (the site widget)', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  let widget: any

  beforeAll(async () => {
    t = await startApp({ publicRateLimitPoints: 1000 })
    sockets = await serveSockets(t)
    acme = await createTenant(t, 'Acme')
    widget = await connectWebchat(t, acme, { allowed_origins: ['https://shop.example.test'], welcome_message: 'Hi! How can we help?' })
  })
  afterAll(async () => {
    await sockets.close()
    await t.close()
  })

  const open = async (body: Record<string, unknown> = {}, origin = 'https://shop.example.test') => {
    const res = await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).set('Origin', origin).send(body)
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body as { visitor_token: string; conversation_id: number }
  }
  const say = (token: string, content: string) => t.http().post('/public/webchat/messages').set('X-Visitor-Token', token).send({ content })
  const thread = (token: string, query: Record<string, unknown> = {}) => t.http().get('/public/webchat/messages').set('X-Visitor-Token', token).query(query)
  const reply = (conversationId: number, body: Record<string, unknown>) =>
    t.http().post('/conversation-messages-transform-outgoing-webchat').set(acme.key).send({ conversation_id: conversationId, ...body })

  it('when a visitor opens the chat with an e-mail, then they get a token and a webchat conversation of the widget, with a new contact carrying the name and e-mail they gave', async () => {
    const known = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ada', email: 'ada.webchat@example.test' })).body
    const session = await open({ name: 'Ada L.', email: 'Ada.Webchat@example.test' })
    expect(session).toEqual({ visitor_token: expect.stringMatching(/^[\w-]{43}$/), conversation_id: expect.any(Number), title: 'Chat with us', welcome_message: 'Hi! How can we help?' })
    const conversation = (await t.http().get(`/conversations/${session.conversation_id}`).set(acme.key)).body
    expect(conversation).toMatchObject({ channel: 'webchat', channel_account_id: widget.id, status: 'open' })
    expect(conversation.contact).toMatchObject({ first_name: 'Ada', last_name: 'L.', email: 'ada.webchat@example.test' })
    expect(conversation.contact_id).not.toBe(known.id)
    const stranger = await open({ name: 'Grace Hopper' })
    const contact = (await t.http().get(`/conversations/${stranger.conversation_id}`).set(acme.key)).body.contact
    expect(contact).toMatchObject({ first_name: 'Grace', last_name: 'Hopper', email: null })
  })

  it('when the Origin is not one of allowed_origins, then 403; an unknown widget token is a 404', async () => {
    const res = await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).set('Origin', 'https://evil.example.test').send({})
    expect(res.status).toBe(403)
    expect((await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({})).status).toBe(403)
    expect((await t.http().post(`/public/webchat/${'x'.repeat(43)}/sessions`).send({})).status).toBe(404)
    const open = await connectWebchat(t, acme)
    expect((await t.http().post(`/public/webchat/${open.widget_token}/sessions`).set('Origin', 'https://anywhere.example.test').send({})).status).toBe(201)
  })

  it("when the widget reads its config, then it gets title, welcome message, colour and corner only (defaults filled in); a page of another origin is refused; an unknown token is a 404", async () => {
    const config = (origin?: string, token = widget.widget_token) => {
      const req = t.http().get(`/public/webchat/${token}/config`)
      return origin ? req.set('Origin', origin) : req
    }
    const res = await config('https://shop.example.test')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual({ title: 'Chat with us', welcome_message: 'Hi! How can we help?', color: '#1f5fbf', position: 'bottom-right' })
    // Without an Origin (a non-browser client, or a page of the service itself): the public settings are answered.
    expect((await config()).status).toBe(200)
    const refused = await config('https://evil.example.test')
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ name: 'Forbidden', message: 'This site may not open the chat' })
    expect((await config(undefined, 'x'.repeat(43))).status).toBe(404)
    expect((await t.http().get(`/public/webchat/${widget.widget_token}/config`).query({ allowed_origins: 1 })).status).toBe(400)

    const styled = await connectWebchat(t, acme, { color: '#0A7D39', position: 'bottom-left' })
    expect((await config('https://anywhere.example.test', styled.widget_token)).body).toEqual({ title: 'Chat with us', welcome_message: null, color: '#0A7D39', position: 'bottom-left' })
    for (const bad of [{ color: 'red' }, { color: '#12345' }, { position: 'top-left' }]) {
      const res = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'webchat', name: 'w', config: bad })
      expect(res.status, JSON.stringify(bad)).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([`config.${Object.keys(bad)[0]}`])
    }
    const inactive = await connectWebchat(t, acme)
    await t.http().patch(`/channel-accounts/${inactive.id}`).set(acme.key).send({ is_active: false }).expect(200)
    expect((await config(undefined, inactive.widget_token)).status).toBe(404)
  })

  it("when a visitor writes and the agent answers, then the visitor's thread shows both (the reply delivered at once), never the notes", async () => {
    const { visitor_token: token, conversation_id: conversationId } = await open({ name: 'Visitor' })
    const mine = await say(token, 'Do you ship to Spain?')
    expect(mine.status, JSON.stringify(mine.body)).toBe(201)
    expect(mine.body).toEqual({ id: expect.any(Number), conversation_id: conversationId, direction: 'inbound', sender_type: 'contact', content: 'Do you ship to Spain?', content_type: 'text', files: [], created_at: expect.stringMatching(ISO_MS) })
    const inbox = (await t.http().get(`/conversations/${conversationId}`).set(acme.key)).body
    expect(inbox).toMatchObject({ unread_count: 1, last_message_preview: 'Do you ship to Spain?' })
    const answer = await reply(conversationId, { content: 'Yes, in 3 days' })
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    expect(answer.body).toMatchObject({ status: 'delivered', channel_account_id: widget.id })
    expect((await reply(conversationId, { content: 'VIP customer', direction: 'note' })).status).toBe(201)
    const seen = await thread(token)
    expect(seen.status).toBe(200)
    expect(seen.body.data.map((m: any) => [m.direction, m.content])).toEqual([['inbound', 'Do you ship to Spain?'], ['outbound', 'Yes, in 3 days']])
    const newer = await thread(token, { 'created_at[$gt]': mine.body.created_at })
    expect(newer.body.data.map((m: any) => m.content)).toEqual(['Yes, in 3 days'])
    const afterMine = await thread(token, { 'id[$gt]': mine.body.id })
    expect(afterMine.body.data.map((m: any) => m.content)).toEqual(['Yes, in 3 days'])
    expect((await thread(token, { 'id[$gt]': 'x' })).status).toBe(400)
    expect((await thread(token, { $limit: 51 })).status).toBe(400)
  })

  it('when two visitors chat, then each sees only their own conversation, and a missing or unknown token is a 401', async () => {
    const first = await open({ name: 'First' })
    const second = await open({ name: 'Second' })
    expect(first.conversation_id).not.toBe(second.conversation_id)
    await say(first.visitor_token, 'I am first')
    await say(second.visitor_token, 'I am second')
    expect((await thread(first.visitor_token)).body.data.map((m: any) => m.content)).toEqual(['I am first'])
    expect((await thread(second.visitor_token)).body.data.map((m: any) => m.content)).toEqual(['I am second'])
    expect((await t.http().get('/public/webchat/messages')).status).toBe(401)
    expect((await thread('not-a-token')).status).toBe(401)
    expect((await say('not-a-token', 'hi')).status).toBe(401)
  })

  it('when the conversation is blocked or deleted, then its visitor token no longer reads, writes or opens a socket, and a visitor already listening is cut off at once', async () => {
    for (const close of ['block', 'delete'] as const) {
      const { visitor_token: token, conversation_id: conversationId } = await open({ name: `Closed by ${close}` })
      const mine = (await say(token, 'Hello?')).body
      const { received, cutOff } = await sockets.listen({ visitorToken: token })
      const closing = close === 'block'
        ? t.http().patch(`/conversations/${conversationId}`).set(acme.key).send({ is_blocked: true })
        : t.http().delete(`/conversations/${conversationId}`).set(acme.key)
      expect((await closing).status).toBe(200)
      await Promise.race([cutOff, new Promise((_resolve, reject) => setTimeout(() => reject(new Error(`not cut off after ${close}`)), 1_000))])
      if (close === 'block') expect((await t.http().delete(`/conversation-messages-webchat/${mine.id}`).set(acme.key)).status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(received).toEqual([])

      for (const res of [await thread(token), await say(token, 'Anyone?')]) {
        expect(res.status, `${close}: ${JSON.stringify(res.body)}`).toBe(403)
        expect(res.body).toMatchObject({ name: 'Forbidden', message: 'This chat is closed' })
      }
      await expect(sockets.listen({ visitorToken: token })).rejects.toThrow('This chat is closed')
    }
  })

  it('when a resolved web chat gets a visitor message, then it reopens', async () => {
    const { visitor_token: token, conversation_id: conversationId } = await open({ name: 'Returning' })
    await say(token, 'Hi')
    await t.http().patch(`/conversations/${conversationId}`).set(acme.key).send({ status: 'resolved' })
    await say(token, 'Me again')
    expect((await t.http().get(`/conversations/${conversationId}`).set(acme.key)).body.status).toBe('open')
  })

  it('when one address opens sessions faster than PUBLIC_RATE_LIMIT_POINTS allows, then 429 with Retry-After', async () => {
    const limited = await startApp({ publicRateLimitPoints: 2 })
    try {
      const tenant = await createTenant(limited, 'Limited')
      const site = (await limited.http().post('/channel-accounts').set(tenant.key).send({ channel: 'webchat', name: 'w', config: {} })).body
      const statuses = []
      for (let i = 0; i < 3; i++) statuses.push((await limited.http().post(`/public/webchat/${site.widget_token}/sessions`).send({})).status)
      expect(statuses).toEqual([201, 201, 429])
      const throttled = await limited.http().get('/public/webchat/messages').set('X-Visitor-Token', 'x')
      expect(throttled.status).toBe(429)
      expect(throttled.headers['retry-after']).toMatch(/^\d+$/)
    } finally {
      await limited.close()
    }
  })

  it("when visitors listen on Socket.io with their token, then each receives only their own conversation's messages, never notes", async () => {
    const first = await open({ name: 'Socket one' })
    const second = await open({ name: 'Socket two' })
    const { received: one } = await sockets.listen({ visitorToken: first.visitor_token })
    const { received: two } = await sockets.listen({ visitorToken: second.visitor_token })
    await expect(sockets.listen({ visitorToken: 'wrong' })).rejects.toThrow('Invalid visitor token')
    await reply(first.conversation_id, { content: 'Hello one' })
    await reply(first.conversation_id, { content: 'secret note', direction: 'note' })
    await reply(second.conversation_id, { content: 'Hello two' })
    await say(first.visitor_token, 'Thanks')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(one.map((r) => [r.event, r.data.content])).toEqual([
      ['conversation-messages-webchat created', 'Hello one'], ['conversation-messages-webchat created', 'Thanks']
    ])
    expect(Object.keys(one[0].data).sort()).toEqual(['content', 'content_type', 'conversation_id', 'created_at', 'direction', 'files', 'id', 'sender_type'])
    expect(two.map((r) => r.data.content)).toEqual(['Hello two'])
  })
})
