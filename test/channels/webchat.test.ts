import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { io as connect } from 'socket.io-client'
import type { Socket } from 'socket.io-client'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS } from '../conversations/fixtures.js'
import { connectWebchat } from './fixtures.js'

describe('web chat (the site widget)', () => {
  let t: TestApp
  let server: http.Server
  let url: string
  let acme: Tenant
  let widget: any
  const sockets: Socket[] = []

  beforeAll(async () => {
    t = await startApp({ publicRateLimitPoints: 1000 })
    server = http.createServer(t.app.callback())
    ;(t.app as any).io.attach(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    acme = await createTenant(t, 'Acme')
    widget = await connectWebchat(t, acme, { allowed_origins: ['https://shop.example.test'], welcome_message: 'Hi! How can we help?' })
  })
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect()
    await new Promise((resolve) => server.close(resolve))
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

  it('when a visitor opens the chat with an e-mail, then they are matched to the contact and get a token and a webchat conversation of the widget', async () => {
    const known = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ada', email: 'ada.webchat@example.test' })).body
    const session = await open({ name: 'Ada L.', email: 'Ada.Webchat@example.test' })
    expect(session).toEqual({ visitor_token: expect.stringMatching(/^[\w-]{43}$/), conversation_id: expect.any(Number), title: 'Chat with us', welcome_message: 'Hi! How can we help?' })
    const conversation = (await t.http().get(`/conversations/${session.conversation_id}`).set(acme.key)).body
    expect(conversation).toMatchObject({ channel: 'webchat', channel_account_id: widget.id, contact_id: known.id, status: 'open' })
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
    const listen = async (auth: Record<string, string>) => {
      const socket = connect(url, { auth, transports: ['websocket'], forceNew: true, reconnection: false })
      sockets.push(socket)
      const received: { event: string; data: any }[] = []
      socket.onAny((event: string, data: any) => received.push({ event, data }))
      await new Promise<void>((resolve, reject) => {
        socket.on('connect', () => resolve())
        socket.on('connect_error', reject)
      })
      return received
    }
    const one = await listen({ visitorToken: first.visitor_token })
    const two = await listen({ visitorToken: second.visitor_token })
    await expect(listen({ visitorToken: 'wrong' })).rejects.toThrow('Invalid visitor token')
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
