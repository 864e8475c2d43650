import crypto from 'node:crypto'
import { describe, expect, it, vi } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { heard, ids, serveSockets } from '../helpers/sockets.js'
import type { Listener } from '../helpers/sockets.js'
import { useApp } from '../helpers/use-app.js'

/**
 * Record events over Socket.io as people, organizations, memberships and credentials change
 * (docs/realtime.md): who hears what, how soon a revoked credential stops hearing, and events
 * across instances sharing Redis. The events of every tenant resource are in events.test.ts.
 */

const REVOCATION_BOUND_MS = 5_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const uid = () => crypto.randomUUID().slice(0, 8)

let t: TestApp
let sockets: Awaited<ReturnType<typeof serveSockets>>
let acme: Tenant
let globex: Tenant

useApp({ tenants: ['Acme', 'Globex'], sockets: true }, (app) => ({ t, tenants: [acme, globex], sockets } = app))

const post = async (tenant: Tenant, path: string, body: Record<string, any>, headers = tenant.key) => {
  const res = await t.http().post(path).set(headers).send(body)
  expect(res.status, `POST ${path} ${JSON.stringify(res.body)}`).toBe(201)
  return res.body
}

describe('users, organizations and memberships', () => {
  it('when an organization or a membership changes, then the members of that organization hear it and nobody else; a user\'s own account change reaches only that user', async () => {
    const member = await addMember(t, acme, 'member')
    const both = await addMember(t, globex, 'member')
    await t.db('organizations_users').insert({ organization_id: acme.organization.id, user_id: both.user.id, role: 'member' })
    const ownerKey = await sockets.listen({ apiKey: acme.apiKey })
    const ownerJwt = await sockets.listen({ accessToken: acme.token })
    const memberJwt = await sockets.listen({ accessToken: member.token })
    const bothJwt = await sockets.listen({ accessToken: both.token })
    const outsider = await sockets.listen({ accessToken: globex.token })

    const renamed = await t.http().patch(`/organizations/${acme.organization.id}`).set(acme.bearer).send({ name: `Acme ${uid()}` })
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200)
    for (const listener of [ownerKey, ownerJwt, memberJwt, bothJwt]) {
      await vi.waitFor(() => expect(heard(listener, 'organizations', 'patched').map((r) => r.data)).toEqual([renamed.body]))
    }

    const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: member.user.id }).first('id')
    const raised = await t.http().patch(`/organizations-users/${membership.id}`).set(acme.bearer).send({ role: 'admin' })
    expect(raised.status).toBe(200)
    for (const listener of [ownerKey, ownerJwt, memberJwt, bothJwt]) {
      await vi.waitFor(() => expect(ids(listener, 'organizations-users', 'patched')).toEqual([membership.id]))
    }

    const profile = await t.http().patch(`/users/${member.user.id}`).set(member.bearer).send({ first_name: 'Renamed' })
    expect(profile.status, JSON.stringify(profile.body)).toBe(200)
    await vi.waitFor(() => expect(heard(memberJwt, 'users', 'patched').map((r) => r.data)).toEqual([profile.body]))
    expect(heard(memberJwt, 'users', 'patched')[0].data).not.toHaveProperty('password')

    await sleep(300)
    for (const listener of [ownerKey, ownerJwt, bothJwt]) expect(heard(listener, 'users')).toEqual([])
    expect(outsider.received).toEqual([])
  })
})

// Each case makes its own member, key or account and checks its own probes by id: they wait out
// their 5 s bounds side by side.
describe.concurrent('revocation, the event side', () => {
  /** A record written in the organization, and whether the listener heard its event within a second. */
  async function hears(listener: Listener, tenant = acme, path = 'companies') {
    const company = await post(tenant, `/${path}`, { name: `Probe ${uid()}` })
    await sleep(1_000)
    return ids(listener, path, 'created').includes(company.id)
  }

  it('when a member is removed from one organization, then within 5 s their socket stops hearing it and still hears their other one', async () => {
    const member = await addMember(t, acme, 'member')
    await t.db('organizations_users').insert({ organization_id: globex.organization.id, user_id: member.user.id, role: 'member' })
    const listener = await sockets.listen({ accessToken: member.token })
    expect(await hears(listener)).toBe(true)
    const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: member.user.id }).first('id')
    expect((await t.http().delete(`/organizations-users/${membership.id}`).set(acme.bearer)).status).toBe(200)
    await sleep(REVOCATION_BOUND_MS)
    expect(await hears(listener)).toBe(false)
    expect(await hears(listener, globex)).toBe(true)
  })

  it('when a role is lowered, then within 5 s the events of resources the new role may not read stop; when it is raised, they come', async () => {
    const admin = await addMember(t, acme, 'admin')
    const adminKey = await keyFor(t, acme, admin.user.id)
    const byJwt = await sockets.listen({ accessToken: admin.token })
    const byKey = await sockets.listen({ apiKey: adminKey['x-api-key'] })
    const subscription = () => post(acme, '/webhook-subscriptions', { url: 'https://hooks.example.test/crm', events: ['*'] })
    const first = await subscription()
    await vi.waitFor(() => expect(ids(byJwt, 'webhook-subscriptions')).toContain(first.id))
    await vi.waitFor(() => expect(ids(byKey, 'webhook-subscriptions')).toContain(first.id))

    const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: admin.user.id }).first('id')
    expect((await t.http().patch(`/organizations-users/${membership.id}`).set(acme.bearer).send({ role: 'member' })).status).toBe(200)
    await sleep(REVOCATION_BOUND_MS)
    const second = await subscription()
    await sleep(1_000)
    expect(ids(byJwt, 'webhook-subscriptions')).not.toContain(second.id)
    expect(ids(byKey, 'webhook-subscriptions')).not.toContain(second.id)
    // What a member may read still comes.
    expect(await hears(byJwt)).toBe(true)

    expect((await t.http().patch(`/organizations-users/${membership.id}`).set(acme.bearer).send({ role: 'admin' })).status).toBe(200)
    await sleep(REVOCATION_BOUND_MS)
    const third = await subscription()
    await vi.waitFor(() => expect(ids(byJwt, 'webhook-subscriptions')).toContain(third.id))
    await vi.waitFor(() => expect(ids(byKey, 'webhook-subscriptions')).toContain(third.id))
  }, 40_000)

  it('when a person joins another organization while connected, then within 5 s their socket hears that organization too', async () => {
    const person = await addMember(t, globex, 'member')
    const listener = await sockets.listen({ accessToken: person.token })
    expect(await hears(listener)).toBe(false)
    await t.db('organizations_users').insert({ organization_id: acme.organization.id, user_id: person.user.id, role: 'member' })
    await sleep(REVOCATION_BOUND_MS)
    expect(await hears(listener)).toBe(true)
  })

  const endings: [string, (key: { id: number }) => Promise<unknown>][] = [
    ['deleted', (key) => t.http().delete(`/api-keys/${key.id}`).set(acme.bearer).expect(200)],
    ['expired', (key) => t.db('api_keys').where({ id: key.id }).update({ expires_at: new Date(Date.now() - 1_000) })]
  ]
  it.each(endings)('when an API key is %s, then within 5 s its socket hears nothing more of any resource', async (_ending, end) => {
    const key = await post(acme, '/api-keys', { organization_id: acme.organization.id, name: `doomed ${uid()}` }, acme.bearer)
    const listener = await sockets.listen({ apiKey: key.key })
    expect(await hears(listener)).toBe(true)
    await end(key)
    await sleep(REVOCATION_BOUND_MS)
    expect(await hears(listener)).toBe(false)
    expect(await hears(listener, acme, 'products')).toBe(false)
  })

  it('when the password or the e-mail address changes, then within 5 s the sockets of earlier JWTs hear nothing more', async () => {
    for (const change of [{ password: 'a brand new secret' }, { email: `moved-${uid()}@example.test` }]) {
      const owner = await createTenant(t, 'Owner')
      const listener = await sockets.listen({ accessToken: owner.token })
      expect(await hears(listener, owner)).toBe(true)
      const res = await t.http().patch(`/users/${owner.user.id}`).set(owner.bearer).send({ ...change, current_password: owner.password })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      await sleep(REVOCATION_BOUND_MS)
      expect(await hears(listener, owner)).toBe(false)
    }
  })

  it('when a connection logs out (Feathers\' logout event), then it leaves its channels and no later check joins it again', async () => {
    const member = await addMember(t, acme, 'member')
    const listener = await sockets.listen({ accessToken: member.token })
    expect(await hears(listener)).toBe(true)
    const connection = (t.app as any).io.sockets.sockets.get(listener.socket.id).feathers
    t.app.emit('logout', {}, { connection })
    expect(await hears(listener)).toBe(false)
    await sleep(REVOCATION_BOUND_MS)
    expect(await hears(listener)).toBe(false)
  })
})

describe.skipIf(!process.env.REDIS_URL)('across instances (REDIS_URL)', () => {
  it('when two instances share an events channel, then a write on one reaches the sockets of the other that may read it, in the shape a read by id answers, and no other organization\'s', async () => {
    const eventsChannel = `crm-test:${crypto.randomUUID()}:events`
    const first = await startApp({ eventsChannel })
    const second = await startApp({ eventsChannel })
    const secondSockets = await serveSockets(second)
    try {
      await Promise.all([(first.app as any).sync.ready, (second.app as any).sync.ready])
      const member = await addMember(t, acme, 'member')
      const ownerKey = await secondSockets.listen({ apiKey: acme.apiKey })
      const memberJwt = await secondSockets.listen({ accessToken: member.token })
      const outsider = await secondSockets.listen({ apiKey: globex.apiKey })
      const company = await first.http().post('/companies').set(acme.key).send({ name: 'Across' })
      const subscription = await first.http().post('/webhook-subscriptions').set(acme.key).send({ url: 'https://hooks.example.test/crm', events: ['*'] })
      expect(subscription.status).toBe(201)
      await vi.waitFor(() => expect(ids(ownerKey, 'companies', 'created')).toEqual([company.body.id]))
      await vi.waitFor(() => expect(ids(ownerKey, 'webhook-subscriptions', 'created')).toEqual([subscription.body.id]))
      expect(heard(ownerKey, 'companies')[0].data).toEqual((await second.http().get(`/companies/${company.body.id}`).set(acme.key)).body)
      expect(heard(ownerKey, 'webhook-subscriptions')[0].data).not.toHaveProperty('secret')
      await vi.waitFor(() => expect(ids(memberJwt, 'companies', 'created')).toEqual([company.body.id]))
      await sleep(300)
      expect(heard(memberJwt, 'webhook-subscriptions')).toEqual([])
      expect(outsider.received).toEqual([])

      // Revocation on the other instance: a member removed through the first stops hearing on the second.
      const membership = await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: member.user.id }).first('id')
      expect((await first.http().delete(`/organizations-users/${membership.id}`).set(acme.bearer)).status).toBe(200)
      await sleep(REVOCATION_BOUND_MS)
      const later = await first.http().post('/companies').set(acme.key).send({ name: 'After' })
      await vi.waitFor(() => expect(ids(ownerKey, 'companies', 'created')).toContain(later.body.id))
      expect(ids(memberJwt, 'companies', 'created')).not.toContain(later.body.id)
    } finally {
      await secondSockets.close()
      await first.close()
      await second.close()
    }
  }, 60_000)
})
