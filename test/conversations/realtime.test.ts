import crypto from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { io as connect } from 'socket.io-client'
import type { Socket } from 'socket.io-client'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createContact, created } from './fixtures.js'

interface Received {
  event: string
  data: any
}

describe('realtime events over Socket.io', () => {
  let t: TestApp
  let server: http.Server
  let url: string
  let acme: Tenant
  let globex: Tenant
  const sockets: Socket[] = []

  beforeAll(async () => {
    t = await startApp()
    server = http.createServer(t.app.callback())
    ;(t.app as any).io.attach(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect()
    await new Promise((resolve) => server.close(resolve))
    await t.close()
  })

  /** A connected socket recording every inbox event it receives. */
  async function listen(auth: Record<string, string>) {
    const socket = connect(url, { auth, transports: ['websocket'], forceNew: true, reconnection: false })
    sockets.push(socket)
    const received: Received[] = []
    socket.onAny((event: string, data: any) => received.push({ event, data }))
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => resolve())
      socket.on('connect_error', reject)
    })
    return { socket, received }
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 300))

  it("when each organization's dashboard listens, then each sees only its own organization's inbox changes, live", async () => {
    const acmeByKey = await listen({ apiKey: acme.apiKey })
    const acmeByJwt = await listen({ accessToken: acme.token })
    const globexByKey = await listen({ apiKey: globex.apiKey })

    const contact = await createContact(t, acme)
    const message = created(await t.http().post('/conversation-messages-playground').set(acme.key).send({ contact_id: contact.id, content: 'Hello' }), 'message')
    await t.http().patch(`/conversations/${message.conversation_id}`).set(acme.key).send({ status: 'resolved' }).expect(200)
    created(await t.http().post('/conversation-predefined-messages').set(acme.key).send({ title: 'Hi', content: 'Hi' }), 'predefined')
    await t.http().post('/companies').set(acme.key).send({ name: 'Not an inbox event' }).expect(201)
    await settle()

    const summary = (received: Received[]) => received.map(({ event, data }) => `${event} ${data.organization_id}`)
    const expected = [
      `conversations created ${acme.organization.id}`,
      `conversations patched ${acme.organization.id}`,
      `conversation-messages-playground created ${acme.organization.id}`,
      `conversations patched ${acme.organization.id}`,
      `conversation-predefined-messages created ${acme.organization.id}`
    ]
    expect(summary(acmeByKey.received)).toEqual(expected)
    expect(summary(acmeByJwt.received)).toEqual(expected)
    expect(acmeByKey.received[1].data).toMatchObject({ id: message.conversation_id, last_message_preview: 'Hello' })
    expect(acmeByKey.received[2].data).toMatchObject({ id: message.id, content: 'Hello' })
    expect(acmeByKey.received[3].data).toMatchObject({ id: message.conversation_id, status: 'resolved' })
    expect(globexByKey.received).toEqual([])

    created(await t.http().post('/conversations').set(globex.key).send({ channel: 'sms', contact_id: (await createContact(t, globex)).id }), 'globex conversation')
    await settle()
    expect(summary(globexByKey.received)).toEqual([`conversations created ${globex.organization.id}`])
    expect(acmeByKey.received).toHaveLength(expected.length)
  })

  it.skipIf(!process.env.REDIS_URL)('when two instances share Redis, then a write on one reaches the sockets of the other (feathers-sync)', async () => {
    const eventsChannel = `crm-test:${crypto.randomUUID()}:events`
    const first = await startApp({ eventsChannel })
    const second = await startApp({ eventsChannel })
    const secondServer = http.createServer(second.app.callback())
    let socket: Socket | undefined
    ;(second.app as any).io.attach(secondServer)
    await new Promise<void>((resolve) => secondServer.listen(0, '127.0.0.1', resolve))
    try {
      await Promise.all([(first.app as any).sync.ready, (second.app as any).sync.ready])
      socket = connect(`http://127.0.0.1:${(secondServer.address() as AddressInfo).port}`, {
        auth: { apiKey: acme.apiKey }, transports: ['websocket'], forceNew: true, reconnection: false
      })
      const received: Received[] = []
      socket.onAny((event: string, data: any) => received.push({ event, data }))
      await new Promise<void>((resolve, reject) => {
        socket!.on('connect', () => resolve())
        socket!.on('connect_error', reject)
      })
      const contact = await first.http().post('/contacts').set(acme.key).send({ first_name: 'Across' })
      const conversation = await first.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: contact.body.id })
      expect(conversation.status).toBe(201)
      await vi.waitFor(() => expect(received.map((r) => [r.event, r.data.id])).toEqual([['conversations created', conversation.body.id]]))
    } finally {
      socket?.disconnect()
      secondServer.closeAllConnections()
      await new Promise((resolve) => secondServer.close(resolve))
      await first.close()
      await second.close()
    }
  })

  it('when REDIS_URL names a Redis that is not there, then the instance\'s own sockets still receive its events', async () => {
    const closed = net.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const alone = await startApp({ redisUrl: `redis://127.0.0.1:${port}` })
    const aloneServer = http.createServer(alone.app.callback())
    ;(alone.app as any).io.attach(aloneServer)
    await new Promise<void>((resolve) => aloneServer.listen(0, '127.0.0.1', resolve))
    let socket: Socket | undefined
    try {
      const tenant = await createTenant(alone, 'Alone')
      socket = connect(`http://127.0.0.1:${(aloneServer.address() as AddressInfo).port}`, {
        auth: { apiKey: tenant.apiKey }, transports: ['websocket'], forceNew: true, reconnection: false
      })
      const received: Received[] = []
      socket.onAny((event: string, data: any) => received.push({ event, data }))
      await new Promise<void>((resolve, reject) => {
        socket!.on('connect', () => resolve())
        socket!.on('connect_error', reject)
      })
      const contact = await alone.http().post('/contacts').set(tenant.key).send({ first_name: 'Offline' })
      const conversation = await alone.http().post('/conversations').set(tenant.key).send({ channel: 'sms', contact_id: contact.body.id })
      expect(conversation.status).toBe(201)
      await vi.waitFor(() => expect(received.map((r) => [r.event, r.data.id])).toEqual([['conversations created', conversation.body.id]]))
    } finally {
      socket?.disconnect()
      aloneServer.closeAllConnections()
      await new Promise((resolve) => aloneServer.close(resolve))
      await alone.close()
    }
  })

  it('when a socket brings no credentials or a wrong key, then the connection is refused', async () => {
    await expect(listen({})).rejects.toMatchObject({ message: 'Invalid API key' })
    await expect(listen({ apiKey: 'crm_nope_nope' })).rejects.toMatchObject({ message: 'Invalid API key' })
  })

  it('when a connected socket calls a service, then it is refused: sockets receive events, calls go through REST', async () => {
    const { socket } = await listen({ apiKey: acme.apiKey })
    const answer: any = await new Promise((resolve) => socket.emit('find', 'conversations', {}, (error: any, data: any) => resolve({ error, data })))
    expect(answer.error).toMatchObject({ name: 'MethodNotAllowed' })
    const login: any = await new Promise((resolve) => socket.emit('create', 'authentication', { strategy: 'local', email: acme.user.email, password: acme.password }, (error: any, data: any) => resolve({ error, data })))
    expect(login.error).toMatchObject({ name: 'MethodNotAllowed' })
  })
})
