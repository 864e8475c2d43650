import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { isEmbedded } from '../../src/db.js'

/**
 * A list page is compiled once per shape of query (filters, operators, order, columns) and then
 * filled with each call's values, instead of a query builder per request (RecordService
 * preparedPage). Every answer here is compared with the rows and totals read from the table by
 * knex itself, for several calls of one shape with different values; on a Postgres server the
 * statements are also checked to be the compiled ones (named only for the unfiltered page).
 */
describe('page statements', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant
  const companies: number[] = []

  beforeAll(async () => {
    // Whole pages are not kept (record-pages.ts): these watch the statements below them.
    t = await startApp({ pageCacheMb: 0 })
    acme = await createTenant(t, 'Shapes')
    other = await createTenant(t, 'Other shapes')
    for (const name of ['North', 'South']) {
      companies.push((await t.http().post('/companies').set(acme.key).send({ name }).expect(201)).body.id)
    }
    const rows = []
    for (let i = 0; i < 30; i++) {
      rows.push({
        organization_id: acme.organization.id, first_name: `Ann ${i}`, last_name: ['Lee', 'Kim', 'Roe'][i % 3],
        email: i % 4 === 0 ? null : `ann${i}@example.test`, company_id: companies[i % 2]
      })
    }
    // Another organization with the same names: never in acme's pages, whatever the shape.
    for (let i = 0; i < 10; i++) rows.push({ organization_id: other.organization.id, first_name: `Ann ${i}`, last_name: 'Lee' })
    await t.db('contacts').insert(rows)
  })
  afterAll(async () => { await t.close() })

  /** The live contacts of acme matching `where`, by id, as knex reads them from the table. */
  const expected = async (where: (builder: any) => void, order: [string, 'asc' | 'desc'][] = [['id', 'asc']]) => {
    const builder = t.db('contacts').where({ organization_id: acme.organization.id }).whereNull('deleted_at').where(where)
    for (const [column, direction] of order) builder.orderBy(column, direction)
    return (await builder.select('id')).map((row) => row.id)
  }

  /** One call's answer and the statements on contacts it ran, with whether each came compiled (it carries its name, undefined when unnamed). */
  async function listed(query: Record<string, unknown>, tenant = acme) {
    const statements: { sql: string; bindings: unknown[]; compiled: boolean; name?: string }[] = []
    const listener = (q: any) => {
      if (/from "contacts"/.test(q.sql)) statements.push({ sql: q.sql, bindings: q.bindings, compiled: Object.hasOwn(q, 'name'), name: q.name })
    }
    t.db.on('query', listener)
    try {
      const response = await t.http().get('/contacts').set(tenant.key).send({ query })
      return { response, statements }
    } finally {
      t.db.removeListener('query', listener)
    }
  }

  it('when one shape of filter is listed with different values, then each page holds the rows and total of its own values, from one compiled statement', async () => {
    const cases: [Record<string, unknown>, (b: any) => void][] = [
      [{ last_name: 'Lee' }, (b) => b.where('last_name', 'Lee')],
      [{ last_name: 'Kim' }, (b) => b.where('last_name', 'Kim')],
      [{ last_name: 'Nobody' }, (b) => b.where('last_name', 'Nobody')],
      [{ company_id: companies[0], last_name: 'Roe' }, (b) => b.where({ company_id: companies[0], last_name: 'Roe' })],
      [{ company_id: companies[1], last_name: 'Lee' }, (b) => b.where({ company_id: companies[1], last_name: 'Lee' })],
      [{ id: { $in: [1, 2, 3] } }, (b) => b.whereIn('id', [1, 2, 3])],
      [{ email: null }, (b) => b.whereNull('email')],
      [{ first_name: { $ilike: 'ann 1%' } }, (b) => b.whereILike('first_name', 'ann 1%')],
      [{ first_name: { $ilike: 'ann 2%' } }, (b) => b.whereILike('first_name', 'ann 2%')],
      [{ $or: [{ last_name: 'Kim' }, { email: null }] }, (b) => b.where((w: any) => w.where('last_name', 'Kim').orWhereNull('email'))]
    ]
    const texts = new Map<string, string>()
    for (const [filter, where] of cases) {
      // Twice: the first call of a shape compiles it, the second only fills it.
      for (const round of [1, 2]) {
        const { response, statements } = await listed({ ...filter, $limit: 4 })
        expect(response.status, JSON.stringify(response.body)).toBe(200)
        const ids = await expected(where)
        expect(response.body, JSON.stringify(filter)).toMatchObject({ total: ids.length, limit: 4, skip: 0 })
        expect(response.body.data.map((row: any) => row.id), JSON.stringify(filter)).toEqual(ids.slice(0, 4))
        expect(statements).toHaveLength(1)
        if (isEmbedded(t.db)) continue
        expect(statements[0].compiled, JSON.stringify(filter)).toBe(true)
        // A filtered page is planned for its values: never a named (prepared) statement.
        expect(statements[0].name).toBeUndefined()
        const shape = JSON.stringify(Object.keys(filter)) + JSON.stringify(Object.values(filter).map((value) => (value === null ? 'null' : typeof value)))
        if (round === 2) expect(texts.get(shape) ?? statements[0].sql).toBe(statements[0].sql)
        texts.set(shape, statements[0].sql)
      }
    }
  })

  it('when a shape pages, sorts or selects, then later pages, the order and the columns are those of the values asked', async () => {
    for (const $skip of [0, 4, 8]) {
      const { response } = await listed({ last_name: 'Lee', $sort: { first_name: -1 }, $limit: 4, $skip })
      const ids = await expected((b) => b.where('last_name', 'Lee'), [['first_name', 'desc'], ['id', 'desc']])
      expect(response.body).toMatchObject({ total: ids.length, skip: $skip })
      expect(response.body.data.map((row: any) => row.id)).toEqual(ids.slice($skip, $skip + 4))
    }
    const past = await listed({ last_name: 'Lee', $limit: 4, $skip: 100 })
    expect(past.response.body).toMatchObject({ total: (await expected((b) => b.where('last_name', 'Lee'))).length, data: [] })
    const selected = await listed({ last_name: 'Kim', $select: ['first_name'], $limit: 2 })
    expect(Object.keys(selected.response.body.data[0]).sort()).toEqual(expect.arrayContaining(['first_name', 'id']))
    expect(selected.response.body.data[0]).not.toHaveProperty('email')
    // The unfiltered page stays the one named statement.
    const plain = await listed({ $limit: 3 })
    expect(plain.response.body.total).toBe((await expected(() => {})).length)
    if (!isEmbedded(t.db)) expect(plain.statements[0].name).toMatch(/^crm page contacts \d+$/)
  })

  it('when a filter is refused or a value is not of its field\'s kind, then the answer is the 400 of the builder\'s path, never a 500', async () => {
    for (const query of [{ no_such_field: 'x' }, { company_id: 'not a number' }, { last_name: { $regex: 'x' } }]) {
      const { response } = await listed(query)
      expect(response.status, JSON.stringify(query)).toBe(400)
      expect(response.body).toMatchObject({ name: 'BadRequest', className: 'bad-request' })
    }
  })

  it('when another organization lists the same shape, then it sees only its records; naming another organization is a 403 and its records by id are a 404', async () => {
    await listed({ last_name: 'Lee', $limit: 50 })
    const theirs = await listed({ last_name: 'Lee', $limit: 50 }, other)
    expect(theirs.response.body.total).toBe(10)
    const mine = new Set(await expected(() => {}))
    expect(theirs.response.body.data.every((row: any) => !mine.has(row.id) && row.organization_id === other.organization.id)).toBe(true)
    const foreign = await listed({ organization_id: other.organization.id, last_name: 'Lee' })
    expect(foreign.response.status).toBe(403)
    const theirId = theirs.response.body.data[0].id
    expect((await t.http().get(`/contacts/${theirId}`).set(acme.key)).status).toBe(404)
    const theirCompany = (await t.http().post('/companies').set(other.key).send({ name: 'Theirs' }).expect(201)).body
    const reference = await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ann', company_id: theirCompany.id })
    expect(reference.status).toBe(400)
    expect(reference.body.errors).toEqual({ company_id: expect.any(String) })
  })
})
