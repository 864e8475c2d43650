import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { isEmbedded, plannedOncePool } from '../../src/db.js'
import { recordTextsOf } from '../../src/services/record-texts.js'

/**
 * The named statements of the hottest reads are prepared once per connection and planned once,
 * for any values (their generic plan): left to itself, Postgres plans a prepared statement for
 * its values (a custom plan, ~0.1-0.2 ms of its CPU for a read by id, more for a page) until the
 * generic plan looks as cheap, which for a page with LIMIT $n it never does. Named statements run
 * on connections that plan them once (plannedOncePool in src/db.ts). These tests run each
 * statement on one connection, on tables large enough for the planner's estimates to matter, and
 * read pg_prepared_statements of that connection: every named read runs on its generic plan.
 * Named statements exist on a Postgres server only: on the embedded database there is nothing
 * to check.
 */
describe.skipIf(!process.env.DATABASE_URL)('named statements are planned once', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant
  const ids: Record<string, number> = {}
  const post = async (path: string, body: Record<string, unknown>, as = tenant) => {
    const res = await t.http().post(path).set(as.key).send(body)
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    return res.body.id as number
  }
  const plans = async (prefix: string) => {
    // The named statements' own connection (one: the pool's size is the database pool's).
    const { rows } = await plannedOncePool(t.db).query(`SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE $1 ORDER BY name`, [`${prefix}%`])
    return rows as { name: string; generic_plans: string; custom_plans: string }[]
  }

  beforeAll(async () => {
    // One connection: pg_prepared_statements shows the statements of the session that reads it.
    // Whole pages are not kept (record-pages.ts): these watch the statements below them.
    t = await startApp({ databasePoolSize: 1, pageCacheMb: 0 })
    tenant = await createTenant(t, 'Plans')
    other = await createTenant(t, 'Other plans')
    ids.company = await post('/companies', { name: 'Plan Co' })
    ids.contact = await post('/contacts', { first_name: 'Plan', company_id: ids.company })
    ids.theirs = await post('/contacts', { first_name: 'Theirs' }, other)
    // Thousands of rows in a few organizations, and fresh statistics, as a real database has.
    for (const organization of [tenant.organization.id, other.organization.id]) {
      await t.db.raw(`INSERT INTO companies (organization_id, name) SELECT ?, 'Co ' || g FROM generate_series(1, 3000) g`, [organization])
      await t.db.raw(`INSERT INTO contacts (organization_id, first_name) SELECT ?, 'C ' || g FROM generate_series(1, 3000) g`, [organization])
    }
    await t.db.raw('ANALYZE companies, contacts')
  })
  afterAll(async () => t?.close())

  it('reads a contact or a company by id on the generic plan of its statement, wire text or not', async () => {
    for (let i = 0; i < 8; i++) {
      for (const path of [`/contacts/${ids.contact}`, `/companies/${ids.company}`]) expect((await t.http().get(path).set(tenant.key)).status).toBe(200)
      // An internal read (a record, not wire text) takes the plain statement.
      expect((await t.app.service('contacts').get(ids.contact, { system: true, query: { organization_id: tenant.organization.id } } as any)).first_name).toBe('Plan')
      // Another organization's record is a 404, on the same statements.
      expect((await t.http().get(`/contacts/${ids.theirs}`).set(tenant.key)).status).toBe(404)
    }
    const statements = await plans('crm get ')
    expect(statements.map((statement) => statement.name.replace(/ \d+$/, ''))).toEqual(['crm get companies live wire', 'crm get contacts live', 'crm get contacts live wire'])
    for (const statement of statements) {
      expect(Number(statement.custom_plans), statement.name).toBe(0)
      expect(Number(statement.generic_plans), statement.name).toBeGreaterThanOrEqual(8)
    }
  })

  it("names a sync's keyset page by its text, and leaves a filtered keyset page to be planned for its values", async () => {
    const page = (query: Record<string, unknown>) =>
      t.http().get('/contacts').set(tenant.key).send({ query: { organization_id: tenant.organization.id, $limit: 50, ...query } })
    const [first] = (await page({ $sort: { updated_at: 1, id: 1 }, $limit: 1 })).body.data
    const cursor = { updated_at: first.updated_at, id: first.id }
    const seen: number[][] = []
    for (let i = 0; i < 8; i++) {
      const res = await page({ $withDeleted: true, $after: cursor })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data).toHaveLength(50)
      seen.push(res.body.data.map((contact: { id: number }) => contact.id))
      const filtered = await page({ $after: cursor, first_name: 'C 7' })
      expect(filtered.body.data.map((contact: { first_name: string }) => contact.first_name)).toEqual(['C 7'])
    }
    expect(new Set(seen.map((ids) => ids.join()))).toHaveProperty('size', 1)
    const statements = await plans('crm keyset contacts')
    expect(statements).toHaveLength(1)
    expect(statements[0]).toMatchObject({ generic_plans: 8, custom_plans: 0 })
  })

  it('reads the versions and the records of filtered pages by key on one generic plan each, whatever the filter', async () => {
    const list = (query: Record<string, unknown>, as = tenant) =>
      t.http().get('/contacts').set(as.key).send({ query: { organization_id: as.organization.id, ...query } })
    const filters = [{ first_name: 'Plan' }, { first_name: { $in: ['C 1', 'C 2', 'Plan'] } }, { $sort: { first_name: -1 } }, { company_id: ids.company }]
    for (let i = 0; i < 4; i++) {
      for (const filter of filters) {
        const res = await list(filter)
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        expect(res.body.data.length).toBeGreaterThan(0)
        expect(res.body.data.every((contact: { organization_id: number }) => contact.organization_id === tenant.organization.id)).toBe(true)
      }
      // The same statement serves another organization, and never crosses into it.
      const theirs = await list({ first_name: 'Theirs' }, other)
      expect(theirs.body.data.map((contact: { id: number }) => contact.id)).toEqual([ids.theirs])
      expect((await list({ first_name: 'Theirs' })).body).toMatchObject({ total: 0, data: [] })
    }
    // One statement for every filter (the read by key does not depend on it), on its generic plan:
    // the versions on every page, the texts where the record texts did not hold them.
    const versions = await plans('crm versions contacts')
    expect(versions).toHaveLength(1)
    expect(Number(versions[0].custom_plans)).toBe(0)
    expect(Number(versions[0].generic_plans)).toBeGreaterThanOrEqual(4 * 4 + 4)
    for (let i = 0; i < 10; i++) {
      for (const filter of filters) {
        recordTextsOf(t.db).clear()
        expect((await list(filter)).status).toBe(200)
      }
    }
    const texts = await plans('crm keyed contacts')
    expect(texts).toHaveLength(1)
    expect(Number(texts[0].custom_plans)).toBe(0)
    expect(Number(texts[0].generic_plans)).toBeGreaterThanOrEqual(10 * 4)
  })

  it('runs the unfiltered page, joined or not, on one generic plan, and reads the relations of a joined page by their change mark', async () => {
    const list = (path: string, query: Record<string, unknown>) => t.http().get(path).set(tenant.key).send({ query: { organization_id: tenant.organization.id, ...query } })
    for (let i = 0; i < 8; i++) {
      const contacts = await list('/contacts', {})
      expect(contacts.status, JSON.stringify(contacts.body)).toBe(200)
      expect(contacts.body.total).toBe(3001)
      const joined = await list('/contacts', { fastJoinForContactList: true, $limit: 50 })
      expect(joined.body.data.find((contact: { id: number }) => contact.id === ids.contact).company).toMatchObject({ id: ids.company, name: 'Plan Co' })
    }
    const pages = await plans('crm page contacts')
    expect(pages).toHaveLength(2)
    for (const page of pages) expect(page).toMatchObject({ generic_plans: 8, custom_plans: 0 })
  })
})
