import crypto from 'node:crypto'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, vi } from 'vitest'
import { Redis } from 'ioredis'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Received } from '../helpers/sockets.js'
import { createContact, created } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('realtime events over Socket.io', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'], sockets: true }, (app) => ({ t, tenants: [acme, globex], sockets } = app))

  const listen = (auth: Record<string, string>) => sockets.listen(auth)
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300))

  it("when each organization's dashboard listens, then each sees only its own organization's changes, the inbox's among them, live", async () => {
    const acmeByKey = await listen({ apiKey: acme.apiKey })
    const acmeByJwt = await listen({ accessToken: acme.token })
    const globexByKey = await listen({ apiKey: globex.apiKey })

    const contact = await createContact(t, acme)
    const message = created(await t.http().post('/conversation-messages-playground').set(acme.key).send({ contact_id: contact.id, content: 'Hello' }), 'message')
    await t.http().patch(`/conversations/${message.conversation_id}`).set(acme.key).send({ status: 'resolved' }).expect(200)
    created(await t.http().post('/conversation-predefined-messages').set(acme.key).send({ title: 'Hi', content: 'Hi' }), 'predefined')
    await t.http().post('/companies').set(acme.key).send({ name: 'Any record publishes' }).expect(201)
    await settle()

    const summary = (received: Received[]) => received.map(({ event, data }) => `${event} ${data.organization_id}`)
    const expected = [
      `contacts created ${acme.organization.id}`,
      `conversations created ${acme.organization.id}`,
      `conversations patched ${acme.organization.id}`,
      `conversation-messages-playground created ${acme.organization.id}`,
      `conversations patched ${acme.organization.id}`,
      `conversation-predefined-messages created ${acme.organization.id}`,
      `companies created ${acme.organization.id}`
    ]
    expect(summary(acmeByKey.received)).toEqual(expected)
    expect(summary(acmeByJwt.received)).toEqual(expected)
    expect(acmeByKey.received[2].data).toMatchObject({ id: message.conversation_id, last_message_preview: 'Hello' })
    expect(acmeByKey.received[3].data).toMatchObject({ id: message.id, content: 'Hello' })
    expect(acmeByKey.received[4].data).toMatchObject({ id: message.conversation_id, status: 'resolved' })
    expect(globexByKey.received).toEqual([])

    created(await t.http().post('/conversations').set(globex.key).send({ channel: 'sms', contact_id: (await createContact(t, globex)).id }), 'globex conversation')
    await settle()
    expect(summary(globexByKey.received)).toEqual([`contacts created ${globex.organization.id}`, `conversations created ${globex.organization.id}`])
    expect(acmeByKey.received).toHaveLength(expected.length)
  })

  it.skipIf(!process.env.REDIS_URL)('when two instances share Redis, then a write on one reaches the sockets of the other', async () => {
    const eventsChannel = `crm-test:${crypto.randomUUID()}:events`
    const first = await startApp({ eventsChannel })
    const second = await startApp({ eventsChannel })
    const secondSockets = await serveSockets(second)
    try {
      await Promise.all([(first.app as any).sync.ready, (second.app as any).sync.ready])
      const { received } = await secondSockets.listen({ apiKey: acme.apiKey })
      const contact = await first.http().post('/contacts').set(acme.key).send({ first_name: 'Across' })
      const conversation = await first.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: contact.body.id })
      expect(conversation.status).toBe(201)
      await vi.waitFor(() => expect(received.map((r) => [r.event, r.data.id])).toEqual([['contacts created', contact.body.id], ['conversations created', conversation.body.id]]))
    } finally {
      await secondSockets.close()
      await first.close()
      await second.close()
    }
  })

  it.skipIf(!process.env.REDIS_URL)('when events travel through Redis, then they travel in their external shape: a new widget\'s identity secret and a visitor\'s token stay in the process', async () => {
    const eventsChannel = `crm-test:${crypto.randomUUID()}:events`
    const shared = await startApp({ eventsChannel })
    const spy = new Redis(process.env.REDIS_URL!)
    const travelled: string[] = []
    try {
      await (shared.app as any).sync.ready
      await spy.subscribe(eventsChannel)
      spy.on('message', (_channel: string, message: string) => travelled.push(message))
      const tenant = await createTenant(shared, 'Spied')
      const widget = created(await shared.http().post('/channel-accounts').set(tenant.key).send({ channel: 'webchat', name: 'Site', config: {} }), 'widget')
      const session = created(await shared.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({ name: 'Visitor' }), 'session')
      await vi.waitFor(() => expect(travelled.map((raw) => JSON.parse(raw).path)).toContain('conversations'))
      expect(widget.identity_secret).toEqual(expect.any(String))
      expect(travelled.filter((raw) => raw.includes(widget.identity_secret) || raw.includes(session.visitor_token))).toEqual([])
      const messages = travelled.map((raw) => JSON.parse(raw))
      expect(messages.map((message) => message.path)).toEqual(expect.arrayContaining(['users', 'organizations', 'api-keys', 'channel-accounts', 'contacts', 'conversations']))
      const withheld = ['password', 'sessions_valid_after', 'key', 'key_hash', 'identity_secret', 'credentials', 'webhook_key']
      expect(messages.filter((message) => withheld.some((name) => name in message.data))).toEqual([])
    } finally {
      spy.disconnect()
      await shared.close()
    }
  })

  it('when REDIS_URL names a Redis that is not there, then the instance\'s own sockets still receive its events', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const alone = await startApp({ redisUrl: `redis://127.0.0.1:${port}` })
    const aloneSockets = await serveSockets(alone)
    try {
      const tenant = await createTenant(alone, 'Alone')
      const { received } = await aloneSockets.listen({ apiKey: tenant.apiKey })
      const contact = await alone.http().post('/contacts').set(tenant.key).send({ first_name: 'Offline' })
      const conversation = await alone.http().post('/conversations').set(tenant.key).send({ channel: 'sms', contact_id: contact.body.id })
      expect(conversation.status).toBe(201)
      await vi.waitFor(() => expect(received.map((r) => [r.event, r.data.id])).toEqual([['contacts created', contact.body.id], ['conversations created', conversation.body.id]]))
    } finally {
      await aloneSockets.close()
      await alone.close()
    }
  })

  it('when a socket brings a wrong key, then the connection is refused; without credentials it connects, hears nothing and its calls are a 401', async () => {
    await expect(listen({ apiKey: 'crm_nope_nope' })).rejects.toMatchObject({ message: 'Invalid API key' })
    const anonymous = await listen({})
    const answer: any = await new Promise((resolve) => anonymous.socket.emit('find', 'conversations', {}, (error: any, data: any) => resolve({ error, data })))
    expect(answer.error).toMatchObject({ name: 'NotAuthenticated', code: 401 })
    await createContact(t, acme).then((contact) => t.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: contact.id }).expect(201))
    await settle()
    expect(anonymous.received).toEqual([])
  })

  it('when a connected socket calls a service, then it gets the answer REST gives', async () => {
    const { socket } = await listen({ apiKey: acme.apiKey })
    const answer: any = await new Promise((resolve) => socket.emit('find', 'conversations', { $limit: 5, $sort: { id: 1 } }, (error: any, data: any) => resolve({ error, data })))
    expect(answer.error).toBeNull()
    const viaRest = await t.http().get('/conversations').query({ $limit: 5, $sort: { id: 1 } }).set(acme.key)
    expect(answer.data).toEqual(viaRest.body)
  })
})
