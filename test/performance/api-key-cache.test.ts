import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor } from '../helpers/fixtures.js'

/**
 * A verified API key is remembered for a few seconds (one database read per key, not per
 * request: counted in test/performance/statement-counts.test.ts), and every change made through
 * this instance to the key, its membership, its user or its organization is honoured on the very
 * next request.
 */
describe('verified API keys', () => {
  let t: TestApp

  beforeAll(async () => {
    t = await startApp()
  })

  afterAll(async () => {
    await t?.close()
  })

  it('when a used key is deactivated with PATCH, then the next request is 401', async () => {
    const tenant = await createTenant(t)
    const keys = await t.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
    await t.http().patch(`/api-keys/${keys.body.data[0].id}`).set(tenant.bearer).send({ active: false }).expect(200)
    const denied = await t.http().get('/companies').set(tenant.key)
    expect(denied.status).toBe(401)
    expect(denied.body.message).toBe('Invalid API key')
  })

  it('when a used key is revoked with DELETE, then the next request is 401', async () => {
    const tenant = await createTenant(t)
    const keys = await t.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
    await t.http().delete(`/api-keys/${keys.body.data[0].id}`).set(tenant.bearer).expect(200)
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(401)
  })

  it('when the key user\'s membership is removed through the API, then the next request is 401', async () => {
    const tenant = await createTenant(t)
    const member = await addMember(t, tenant, 'member')
    const key = await keyFor(t, tenant, member.user.id)
    expect((await t.http().get('/companies').set(key)).status).toBe(200)
    const memberships = await t.http().get('/organizations-users').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    const membership = memberships.body.data.find((m: { user_id: number }) => m.user_id === member.user.id)
    await t.http().delete(`/organizations-users/${membership.id}`).set(tenant.bearer).expect(200)
    expect((await t.http().get('/companies').set(key)).status).toBe(401)
  })
})
