import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Listener } from '../helpers/sockets.js'
import { connectWebchat } from '../channels/fixtures.js'
import { SocketCredentials, organizationChannel } from '../../src/realtime-connections.js'
import type { Connection } from '../../src/realtime-connections.js'

/** A connection is one identity: staff (an API key or a JWT) or a web-chat visitor, never both (docs/realtime.md). */

const REVOCATION_BOUND_MS = 5_000
const ONE_IDENTITY = 'A connection is one identity'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let t: TestApp
let sockets: Awaited<ReturnType<typeof serveSockets>>
let acme: Tenant
let globex: Tenant
/** A visitor token of another organization's public widget: anyone can get one. */
let strangersVisitorToken: string

beforeAll(async () => {
  t = await startApp({ publicRateLimitPoints: 1000 })
  sockets = await serveSockets(t)
  acme = await createTenant(t, 'Acme')
  globex = await createTenant(t, 'Globex')
  const widget = await connectWebchat(t, globex)
  strangersVisitorToken = (await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({})).body.visitor_token
})
afterAll(async () => {
  await sockets?.close()
  await t?.close()
})

/** Calls a service over the socket the way the Feathers client does; resolves with the error or the answer. */
const call = (listener: Listener, method: string, path: string, ...args: unknown[]) =>
  new Promise<{ error?: any; result?: any }>((resolve) => listener.socket.emit(method, path, ...args, (error: any, result: any) => resolve({ error, result })))

const heardKeys = (listener: Listener) => listener.received.filter((r) => r.event === 'api-keys created').map((r) => r.data.id as number)

describe('a socket presents one identity', () => {
  const mixed: [string, () => Record<string, string>, () => Record<string, string>][] = [
    ['an x-api-key header', () => ({ visitorToken: strangersVisitorToken }), () => acme.key],
    ['an Authorization Bearer header', () => ({ visitorToken: strangersVisitorToken }), () => acme.bearer],
    ['auth.apiKey', () => ({ apiKey: acme.apiKey, visitorToken: strangersVisitorToken }), () => ({})],
    ['auth.accessToken', () => ({ accessToken: acme.token, visitorToken: strangersVisitorToken }), () => ({})]
  ]
  it.each(mixed)('when a handshake brings %s and a visitor token, then it is refused with a connect_error and left in no channel', async (_staff, auth, headers) => {
    await expect(sockets.listen(auth(), headers())).rejects.toThrow(ONE_IDENTITY)
    expect(t.app.channel(organizationChannel(acme.organization.id)).length).toBe(0)
  })

  it('when a handshake brings staff credentials both in its headers and in its auth payload, then it is refused', async () => {
    await expect(sockets.listen({ accessToken: globex.token }, acme.key)).rejects.toThrow(ONE_IDENTITY)
  })

  it("when an admin's socket signs in by its Authorization header alone, then it hears admin events, and nothing of the organization 5 s after the admin's removal", async () => {
    const admin = await addMember(t, acme, 'admin')
    await expect(sockets.listen({ visitorToken: strangersVisitorToken }, admin.bearer)).rejects.toThrow(ONE_IDENTITY)
    const byHeader = await sockets.listen({}, admin.bearer)
    const before = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'heard' })
    await vi.waitFor(() => expect(heardKeys(byHeader)).toEqual([before.body.id]))

    const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: admin.user.id }).first('id')
    expect((await t.http().delete(`/organizations-users/${membership.id}`).set(acme.bearer)).status).toBe(200)
    await sleep(REVOCATION_BOUND_MS)
    await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'unheard' }).expect(201)
    await sleep(500)
    expect(heardKeys(byHeader)).toEqual([before.body.id])
  })

  it('when a visitor connection signs in (authentication create), then it is refused and stays a visitor: its calls are 401 and it hears no organization', async () => {
    const visitor = await sockets.listen({ visitorToken: strangersVisitorToken })
    const logins = [
      { strategy: 'local', email: acme.user.email, password: acme.password },
      { strategy: 'jwt', accessToken: acme.token },
      { strategy: 'api-key', apiKey: acme.apiKey }
    ]
    for (const login of logins) {
      const { error } = await call(visitor, 'create', 'authentication', login, {})
      expect(error, login.strategy).toMatchObject({ name: 'Forbidden', code: 403, message: expect.stringContaining('open a new connection') })
    }
    expect((await call(visitor, 'find', 'contacts', { organization_id: acme.organization.id })).error).toMatchObject({ code: 401 })
    await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'unheard by visitors' }).expect(201)
    await t.http().post('/contacts').set(acme.key).send({ first_name: 'Unheard' }).expect(201)
    await sleep(500)
    expect(visitor.received).toEqual([])
  })
})

describe('the credentials sweep', () => {
  it('when one of the credentials a connection was admitted with fails, then the connection is ended, whatever the others say', async () => {
    const session = await t.db('webchat_sessions').orderBy('id', 'desc').first('id', 'organization_id')
    const doomedKey = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'doomed' })
    const visitor = { kind: 'visitor' as const, organization_id: session.organization_id, id: session.id }
    const key = { kind: 'api-key' as const, organization_id: acme.organization.id, id: doomedKey.body.id }
    const both: Connection = { credentials: [visitor, key] }
    const visitorOnly: Connection = { credentials: [visitor] }
    const ended: Connection[] = []
    const onDisconnect = (connection: Connection) => ended.push(connection)
    t.app.on('disconnect', onDisconnect)
    const sweep = new SocketCredentials(t.app)
    try {
      sweep.track(both)
      sweep.track(visitorOnly)
      await sweep.sweep()
      expect(ended).toEqual([])
      await t.http().delete(`/api-keys/${doomedKey.body.id}`).set(acme.bearer).expect(200)
      await sweep.sweep()
      expect(ended).toEqual([both])
    } finally {
      t.app.removeListener('disconnect', onDisconnect)
    }
  })
})
