import crypto from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, signUp } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Listener } from '../helpers/sockets.js'
import { useApp } from '../helpers/use-app.js'

/** Sockets authenticate once, in their handshake; these tests end their credentials while they are open. */
const REVOCATION_BOUND_MS = 5_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Settles when the promise does, or fails the test after the bound. */
const within = <T>(ms: number, promise: Promise<T>, what: string) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`${what}: not within ${ms} ms`)))])

describe('sockets whose credentials stop being valid', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'], sockets: true }, (app) => ({ t, tenants: [acme, globex], sockets } = app))

  /** The ids of the conversations whose 'created' event reached the socket. */
  const conversationsHeard = (listener: Listener) => listener.received.filter((r) => r.event === 'conversations created').map((r) => r.data.id as number)

  /** A conversation written in the tenant's organization (its 'created' event goes to that organization's sockets). */
  async function newConversation(tenant: Tenant, app: TestApp = t) {
    const contact = await app.http().post('/contacts').set(tenant.key).send({ first_name: 'Probe' })
    const conversation = await app.http().post('/conversations').set(tenant.key).send({ channel: 'sms', contact_id: contact.body.id })
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201)
    await sleep(500)
    return conversation.body.id as number
  }

  async function newKey(tenant: Tenant) {
    const res = await t.http().post('/api-keys').set(tenant.bearer).send({ organization_id: tenant.organization.id, name: `socket key ${crypto.randomUUID()}` })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body as { id: number; key: string }
  }

  /** A user of its own who is also a member of the tenant's organization (the fixtures' way: the row written directly). */
  async function memberOf(tenant: Tenant) {
    const member = await createTenant(t, 'Own')
    await t.db('organizations_users').insert({ organization_id: tenant.organization.id, user_id: member.user.id, role: 'member' })
    const login = await t.http().post('/authentication').send({ strategy: 'local', email: member.user.email, password: member.password })
    return { ...member, token: login.body.accessToken as string }
  }

  const keyEndings: [string, (key: { id: number }) => Promise<unknown>][] = [
    ['deleted', (key) => t.http().delete(`/api-keys/${key.id}`).set(acme.bearer).expect(200)],
    ['deactivated', (key) => t.http().patch(`/api-keys/${key.id}`).set(acme.bearer).send({ active: false }).expect(200)],
    // The API only takes expiries in the future: the key reaches its own, as time would bring it.
    ['expired', (key) => t.db('api_keys').where({ id: key.id }).update({ expires_at: new Date(Date.now() - 1_000) })]
  ]
  it.each(keyEndings)('when an API key is %s, then its socket is cut off within 5 s and hears nothing more, while another key of the organization still hears', async (ending, end) => {
    const doomed = await newKey(acme)
    const revoked = await sockets.listen({ apiKey: doomed.key })
    const control = await sockets.listen({ apiKey: acme.apiKey })
    await end(doomed)
    await within(REVOCATION_BOUND_MS, revoked.cutOff, `the ${ending} key's socket cut off`)
    const id = await newConversation(acme)
    expect(conversationsHeard(revoked)).toEqual([])
    expect(conversationsHeard(control)).toEqual([id])
  })

  it('when a member is removed from one organization, then within 5 s their JWT socket stops hearing it but still hears their other one, and their API key socket there is cut off', async () => {
    const member = await memberOf(acme)
    const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: member.user.id }).first('id')
    const memberKey = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'member key' })
    await t.db('api_keys').where({ id: memberKey.body.id }).update({ user_id: member.user.id })
    const byJwt = await sockets.listen({ accessToken: member.token })
    const byKey = await sockets.listen({ apiKey: memberKey.body.key })
    const control = await sockets.listen({ apiKey: acme.apiKey })
    const before = await newConversation(acme)
    expect(conversationsHeard(byJwt)).toEqual([before])

    expect((await t.http().delete(`/organizations-users/${membership.id}`).set(acme.bearer)).status).toBe(200)
    await within(REVOCATION_BOUND_MS, byKey.cutOff, 'the removed member\'s key socket cut off')
    await sleep(REVOCATION_BOUND_MS)
    const inAcme = await newConversation(acme)
    const inTheirOwn = await newConversation(member)
    expect(byJwt.socket.connected).toBe(true)
    expect(conversationsHeard(byJwt)).toEqual([before, inTheirOwn])
    expect(conversationsHeard(byKey)).toEqual([before])
    expect(conversationsHeard(control)).toEqual([before, inAcme])
  })

  it('when the password or the e-mail address changes, then sockets of JWTs issued before are cut off within 5 s; a new login connects and hears', async () => {
    const changes = [
      { password: 'a brand new secret' },
      { email: `moved-${crypto.randomUUID().slice(0, 8)}@example.test` }
    ]
    for (const change of changes) {
      const owner = await createTenant(t, 'Owner')
      const revoked = await sockets.listen({ accessToken: owner.token })
      const res = await t.http().patch(`/users/${owner.user.id}`).set(owner.bearer).send({ ...change, current_password: owner.password })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      await within(REVOCATION_BOUND_MS, revoked.cutOff, `the socket of a JWT issued before ${Object.keys(change)[0]} change cut off`)
      const login = await t.http().post('/authentication').send({ strategy: 'local', email: change.email ?? owner.user.email, password: change.password ?? owner.password })
      const renewed = await sockets.listen({ accessToken: login.body.accessToken })
      const id = await newConversation(owner)
      expect(conversationsHeard(revoked)).toEqual([])
      expect(conversationsHeard(renewed)).toEqual([id])
    }
  })

  it('when a JWT expires while its socket is open, then the socket is cut off', async () => {
    const { user } = await signUp(t)
    // A JWT's exp is in whole seconds: a lifetime of '1s' can end a millisecond after signing,
    // before the handshake; '2s' lives at least a second, then ends while the socket is open.
    const shortLived = await t.app.service('authentication').createAccessToken({ sub: String(user.id), iat_ms: Date.now() }, { expiresIn: '2s' })
    const expiring = await sockets.listen({ accessToken: shortLived })
    await within(2_000 + REVOCATION_BOUND_MS, expiring.cutOff, 'the expired JWT\'s socket cut off')
  })

  it('when one organization\'s key is deleted, then the sockets of the other organization are untouched', async () => {
    const doomed = await newKey(acme)
    const revoked = await sockets.listen({ apiKey: doomed.key })
    const other = await sockets.listen({ apiKey: globex.apiKey })
    await t.http().delete(`/api-keys/${doomed.id}`).set(acme.bearer).expect(200)
    await within(REVOCATION_BOUND_MS, revoked.cutOff, 'the deleted key\'s socket cut off')
    const id = await newConversation(globex)
    expect(other.socket.connected).toBe(true)
    expect(conversationsHeard(other)).toEqual([id])
  })

  it.skipIf(!process.env.REDIS_URL)('when two instances share Redis and a key is deleted through one, then its socket on the other is cut off within 5 s', async () => {
    const eventsChannel = `crm-test:${crypto.randomUUID()}:events`
    const first = await startApp({ eventsChannel })
    const second = await startApp({ eventsChannel })
    const secondSockets = await serveSockets(second)
    try {
      await Promise.all([(first.app as any).sync.ready, (second.app as any).sync.ready])
      const doomed = await newKey(acme)
      const revoked = await secondSockets.listen({ apiKey: doomed.key })
      const control = await secondSockets.listen({ apiKey: acme.apiKey })
      expect((await first.http().delete(`/api-keys/${doomed.id}`).set(acme.bearer)).status).toBe(200)
      await within(REVOCATION_BOUND_MS, revoked.cutOff, 'the deleted key\'s socket on the other instance cut off')
      const id = await newConversation(acme, first)
      expect(conversationsHeard(revoked)).toEqual([])
      expect(conversationsHeard(control)).toEqual([id])
    } finally {
      await secondSockets.close()
      await first.close()
      await second.close()
    }
  })
})
