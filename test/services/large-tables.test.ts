import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { planOfCall, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

// Organizations of tens of thousands of rows (`npm run test:heavy`, test/heavy.ts): the search
// indexes' plans on a large contacts table, and a 5,000-contact import through the batch writes.
describe('large tables', () => {
  let t: TestApp

  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => { await t.close() })

  const search = (tenant: Tenant, body: Record<string, unknown>) =>
    t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'search').send(body)
  const post = (tenant: Tenant, path: string, body: unknown) => t.http().post(path).set(tenant.key).send(body as object)
  const method = (tenant: Tenant, verb: 'post' | 'patch', path: string, name: string, body: unknown) =>
    t.http()[verb](path).set(tenant.key).set('X-Service-Method', name).send(body as object)
  const liveContacts = (tenant: Tenant) => t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at')

  it('when the table is large, then every search mode, and the list of numbers to fix, is planned on indexes, without a sequential scan', async () => {
    const tenant = await createTenant(t, 'Big')
    const organizationId = tenant.organization.id
    // In ten statements: on embedded Postgres each statement runs on the test's own thread.
    for (let start = 1; start <= 20000; start += 2000) {
      await t.db.raw(
        `INSERT INTO contacts (organization_id, first_name, last_name, email, phone, phone_e164, phone_country_code, phone_country_iso)
         SELECT ?, 'First' || md5(i::text), 'Last' || md5((i * 7)::text), 'user' || md5(i::text) || '@example.test',
                lpad((i * 7919 % 1000000000)::text, 10, '5'), '+1' || lpad((i * 7919 % 1000000000)::text, 10, '5'), '+1', 'US'
         FROM generate_series(?::int, ?::int) AS i`,
        [organizationId, start, start + 1999]
      )
    }
    // What autovacuum does in production: statistics, and GIN pending lists merged into the index.
    await t.db.raw('VACUUM ANALYZE contacts')
    const cases: Record<string, unknown>[] = [
      { searchTerm: 'c4ca4', searchIn: 'name' },
      { searchTerm: 'firstc4', searchIn: 'name' },
      { searchTerm: 'c81e7', searchIn: 'email' },
      { searchTerm: '791979', searchIn: 'phone', phone_country_code: '+1', phone_country_iso: 'US' }
    ]
    for (const body of cases) {
      const { result: res, plan } = await planOfCall(t.app.get('knex'), () => search(tenant, body))
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(plan, plan).not.toContain('Seq Scan')
    }
    // docs/contacts.md#numbers-stored-before-validation: read from their partial index.
    const unparsed = await planOfCall(t.app.get('knex'), () => t.http().get('/contacts').set(tenant.key).send({ query: { phone_e164: null, phone: { $ne: null } } }))
    expect(unparsed.result.status).toBe(200)
    expect(unparsed.plan, unparsed.plan).not.toContain('Seq Scan')
  }, 120_000)

  it('when a new user imports 5,000 contacts in 50 requests and then the same file again as an upsert by e-mail, then 5,000 contacts exist, updated, within the API-key limit', async () => {
    const importer = await createTenant(t, 'Importer')
    const file = Array.from({ length: 50 }, (_v, b) => Array.from({ length: 100 }, (_w, i) => ({ first_name: 'Person', last_name: `${b * 100 + i}`, email: `person${b * 100 + i}@import.test` })))
    let remaining = Infinity
    for (const records of file) {
      const res = await post(importer, '/contacts', records)
      expect(res.status).toBe(201)
      remaining = Number(res.headers['ratelimit-remaining'])
    }
    expect(remaining).toBe(1000 - 50)
    for (const records of file) {
      const res = await method(importer, 'post', '/contacts', 'upsert', { idProperty: 'email', records: records.map((r) => ({ ...r, last_name: `${r.last_name} again` })) })
      expect(res.body).toMatchObject({ created: 0, updated: 100 })
    }
    const stored = await liveContacts(importer)
    expect(stored).toHaveLength(5000)
    expect(stored.every((contact: any) => contact.last_name.endsWith(' again'))).toBe(true)
  }, 300_000)
})
