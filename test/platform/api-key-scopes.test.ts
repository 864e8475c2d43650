import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/** API keys fit for integrations: scopes, expiry, last use. */
describe('API key scopes and expiry', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const newKey = async (tenant: Tenant, fields: Record<string, unknown> = {}) => {
    const res = await t.http().post('/api-keys').set(tenant.bearer).send({ organization_id: tenant.organization.id, name: 'integration', ...fields })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return { record: res.body, headers: { 'x-api-key': res.body.key as string } }
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  it('when a key is created without scopes, then it may write, and it is listed with its scopes, expiry and last use', async () => {
    const { record, headers } = await newKey(acme)
    expect(record).toMatchObject({ scopes: ['write'], expires_at: null, last_used_at: null })
    expect((await t.http().post('/contacts').set(headers).send({ first_name: 'Writer' })).status).toBe(201)
    const listed = await t.http().get('/api-keys').set(acme.bearer).query({ organization_id: acme.organization.id, id: record.id })
    expect(listed.body.data).toEqual([expect.objectContaining({ id: record.id, scopes: ['write'], expires_at: null, last_used_at: expect.any(String) })])
    expect(listed.body.data[0]).not.toHaveProperty('key_hash')
  })

  describe("a key with the scope 'read'", () => {
    let reader: Record<string, string>
    let contactId: number

    beforeAll(async () => {
      reader = (await newKey(acme, { scopes: ['read'] })).headers
      contactId = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Existing', email: 'existing@example.test' })).body.id
    })

    it('when it reads (find, get, search, find-duplicates), then it is served', async () => {
      expect((await t.http().get('/contacts').set(reader)).status).toBe(200)
      expect((await t.http().get(`/contacts/${contactId}`).set(reader)).status).toBe(200)
      const search = await t.http().post('/contacts').set(reader).set('X-Service-Method', 'search').send({ searchIn: 'email', searchTerm: 'existing' })
      expect(search.status).toBe(200)
      expect(search.body.data.map((c: any) => c.id)).toEqual([contactId])
      expect((await t.http().post('/contacts').set(reader).set('X-Service-Method', 'find-duplicates').send({ searchIn: 'email' })).status).toBe(200)
      for (const path of ['/companies', '/products']) {
        expect((await t.http().post(path).set(reader).set('X-Service-Method', 'search').send({ searchTerm: 'ab' })).status, path).toBe(200)
      }
      expect((await t.http().get('/reservation-available-slots').set(reader).query({ service_id: 1, date: '2030-01-01' })).status).not.toBe(403)
    })

    it('when a read-only key tries to write, then 403 and nothing is written', async () => {
      const before = await t.db('contacts').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const attempts = [
        t.http().post('/contacts').set(reader).send({ first_name: 'Nope' }),
        t.http().patch(`/contacts/${contactId}`).set(reader).send({ first_name: 'Changed' }),
        t.http().delete(`/contacts/${contactId}`).set(reader),
        t.http().post('/contacts').set(reader).set('X-Service-Method', 'merge').send({ primary_id: contactId, duplicate_ids: [contactId + 1] }),
        t.http().post('/companies').set(reader).send({ name: 'Nope Inc' }),
        t.http().patch('/activities').set(reader).send({ ids: [1], done: true }),
        t.http().post('/reservation-booking-links').set(reader).send({ name: 'x', slug: 'read-only-key' })
      ]
      for (const attempt of attempts) {
        const res = await attempt
        expect(res.status, JSON.stringify(res.body)).toBe(403)
        expect(res.body).toMatchObject({ name: 'Forbidden', code: 403, className: 'forbidden' })
        expect(res.body.message).toMatch(/only read/)
      }
      expect(await t.db('contacts').where({ organization_id: acme.organization.id }).count({ n: '*' })).toEqual(before)
      expect((await t.http().get(`/contacts/${contactId}`).set(reader)).body).toMatchObject({ first_name: 'Existing', deleted_at: null })
    })

    it('when it names another organization, then 403 as for any key', async () => {
      expect((await t.http().get('/contacts').set(reader).query({ organization_id: other.organization.id })).status).toBe(403)
    })
  })

  it("when a key's scopes change from write to read, then its next write is refused at once", async () => {
    const { record, headers } = await newKey(acme)
    expect((await t.http().post('/companies').set(headers).send({ name: 'Before' })).status).toBe(201)
    const patched = await t.http().patch(`/api-keys/${record.id}`).set(acme.bearer).send({ scopes: ['read'] })
    expect(patched.status).toBe(200)
    expect(patched.body.scopes).toEqual(['read'])
    expect((await t.http().post('/companies').set(headers).send({ name: 'After' })).status).toBe(403)
    expect((await t.http().get('/companies').set(headers)).status).toBe(200)
  })

  it('when a key passes its expires_at, then 401 Invalid API key, even while the key is remembered as verified', async () => {
    const { record, headers } = await newKey(acme, { expires_at: new Date(Date.now() + 1500).toISOString() })
    expect(record.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect((await t.http().get('/contacts').set(headers)).status).toBe(200)
    await sleep(Date.parse(record.expires_at) - Date.now() + 50)
    const expired = await t.http().get('/contacts').set(headers)
    expect(expired.status).toBe(401)
    expect(expired.body).toMatchObject({ name: 'NotAuthenticated', message: 'Invalid API key' })
    // Extended by its owner: it works again.
    await t.http().patch(`/api-keys/${record.id}`).set(acme.bearer).send({ expires_at: new Date(Date.now() + 60_000).toISOString() }).expect(200)
    expect((await t.http().get('/contacts').set(headers)).status).toBe(200)
    await t.http().patch(`/api-keys/${record.id}`).set(acme.bearer).send({ expires_at: null }).expect(200)
    expect((await t.http().get('/contacts').set(headers)).status).toBe(200)
  })

  it('when scopes or expires_at are invalid, then 400 naming the field and no key is made', async () => {
    const before = await t.db('api_keys').count({ n: '*' })
    const cases: [Record<string, unknown>, string][] = [
      [{ scopes: [] }, 'scopes'],
      [{ scopes: ['admin'] }, 'scopes'],
      [{ scopes: ['read', 'read'] }, 'scopes'],
      [{ expires_at: 'tomorrow' }, 'expires_at'],
      [{ expires_at: new Date(Date.now() - 1000).toISOString() }, 'expires_at']
    ]
    for (const [body, field] of cases) {
      const res = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'bad', ...body })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(Object.keys(res.body.errors).some((key) => key.startsWith(field)), JSON.stringify(res.body.errors)).toBe(true)
    }
    expect(await t.db('api_keys').count({ n: '*' })).toEqual(before)
  })

  it("when another organization's key is patched, then 404 and its scopes stay", async () => {
    const theirs = await newKey(other)
    const res = await t.http().patch(`/api-keys/${theirs.record.id}`).set(acme.bearer).send({ scopes: ['read'] })
    expect(res.status).toBe(404)
    expect((await t.db('api_keys').where({ id: theirs.record.id }).first()).scopes).toEqual(['write'])
  })

  it('when a key makes many requests within a minute, then last_used_at is written once, not once per request', async () => {
    const { record, headers } = await newKey(acme)
    const lastUsed = async () => (await t.db('api_keys').where({ id: record.id }).first()).last_used_at
    expect(await lastUsed()).toBeNull()
    expect((await t.http().get('/contacts').set(headers)).status).toBe(200)
    const first = await lastUsed()
    expect(first).toBeInstanceOf(Date)
    for (let i = 0; i < 30; i++) expect((await t.http().get('/contacts').set(headers)).status).toBe(200)
    expect(await lastUsed()).toEqual(first)
  })
})
