import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { planOfCall, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { MAX_OR_BRANCHES } from '../../src/schemas.js'
import { createDeal, createPipeline, createProduct } from './deal-fixtures.js'

/** Sync and partial reads: $withDeleted, $after keyset pages, $select, $or, custom-field filters. */
describe('sync and partial reads', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const list = (tenant: Tenant, path: string, query: Record<string, unknown>) => t.http().get(path).set(tenant.key).send({ query })
  const created = (res: { status: number; body: any }) => {
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body
  }
  const contact = async (tenant: Tenant, body: Record<string, unknown>) =>
    created(await t.http().post('/contacts').set(tenant.key).send(body))

  /** Pulls every record after the cursor, page by page with $after, as a sync client does. */
  async function pullAll(tenant: Tenant, path: string, after: { updated_at: string; id: number }, limit = 2, extra: Record<string, unknown> = {}) {
    const records: any[] = []
    let cursor = after
    for (let page = 0; page < 100; page++) {
      const res = await list(tenant, path, { $withDeleted: true, $after: cursor, $sort: { updated_at: 1, id: 1 }, $limit: limit, ...extra })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      records.push(...res.body.data)
      if (res.body.data.length < limit) return { records, cursor }
      expect(res.body.next).toEqual({ updated_at: res.body.data.at(-1).updated_at, id: res.body.data.at(-1).id })
      cursor = res.body.next
    }
    throw new Error('the sync did not end')
  }

  describe('$withDeleted and $after', () => {
    it('when a sync client pulls the changes since its cursor, then it sees a creation, an edit and a deletion (with deleted_at)', async () => {
      const start = { updated_at: new Date(Date.now() - 1000).toISOString(), id: 0 }
      const kept = await contact(acme, { first_name: 'Kept' })
      const edited = await contact(acme, { first_name: 'Edited' })
      const gone = await contact(acme, { first_name: 'Gone' })
      const first = await pullAll(acme, '/contacts', start)
      expect(first.records.map((r) => r.id)).toEqual(expect.arrayContaining([kept.id, edited.id, gone.id]))

      const cursor = { updated_at: first.records.at(-1).updated_at, id: first.records.at(-1).id }
      const patched = await t.http().patch(`/contacts/${edited.id}`).set(acme.key).send({ last_name: 'Changed' })
      expect(patched.status).toBe(200)
      const removed = await t.http().delete(`/contacts/${gone.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      // Deletion moves updated_at to the deletion instant: that is what puts it after the cursor.
      expect(removed.body.updated_at).toBe(removed.body.deleted_at)
      expect(Date.parse(removed.body.updated_at)).toBeGreaterThan(Date.parse(gone.updated_at))

      const second = await pullAll(acme, '/contacts', cursor)
      expect(second.records.map((r) => r.id)).toEqual([edited.id, gone.id])
      expect(second.records[0]).toMatchObject({ last_name: 'Changed', deleted_at: null })
      expect(second.records[1]).toMatchObject({ first_name: 'Gone', deleted_at: removed.body.deleted_at })

      // The same pull without $withDeleted, by updated_at filter, leaves the deletion out.
      const live = await list(acme, '/contacts', { updated_at: { $gt: cursor.updated_at }, $sort: { updated_at: 1, id: 1 } })
      expect(live.body.data.map((r: any) => r.id)).toEqual([edited.id])
      const withDeleted = await list(acme, '/contacts', { updated_at: { $gt: cursor.updated_at }, $sort: { updated_at: 1, id: 1 }, $withDeleted: true })
      expect(withDeleted.body.data.map((r: any) => r.id)).toEqual([edited.id, gone.id])
      expect(withDeleted.body.total).toBe(2)
    })

    it('when every syncable resource is pulled with $after pages of 2, then each record comes once, deleted ones included', async () => {
      const start = { updated_at: new Date(Date.now() - 1000).toISOString(), id: 0 }
      const board = await createPipeline(t, acme)
      const company = created(await t.http().post('/companies').set(acme.key).send({ name: 'Initech' }))
      const person = await contact(acme, { first_name: 'Pat' })
      const product = await createProduct(t, acme, { sku: `SKU-${Date.now()}` })
      const deal = await createDeal(t, acme, board, { contact_id: person.id })
      const made: Record<string, number[]> = { '/companies': [company.id], '/products': [product.id], '/deals': [deal.id] }
      for (let i = 0; i < 2; i++) {
        made['/companies'].push(created(await t.http().post('/companies').set(acme.key).send({ name: `Company ${i}` })).id)
        made['/products'].push((await createProduct(t, acme, { name: `Product ${i}` })).id)
        made['/deals'].push((await createDeal(t, acme, board, { name: `Deal ${i}` })).id)
      }
      made['/deal-products'] = []
      made['/activities'] = []
      for (let i = 0; i < 3; i++) {
        made['/deal-products'].push(created(await t.http().post('/deal-products').set(acme.key).send({ deal_id: deal.id, product_id: product.id, quantity: i + 1 })).id)
        made['/activities'].push(created(await t.http().post('/activities').set(acme.key).send({ subject: `Call ${i}`, contact_id: person.id })).id)
      }
      for (const [path, ids] of Object.entries(made)) {
        const removed = await t.http().delete(`${path}/${ids[1]}`).set(acme.key)
        expect(removed.status, `${path} ${JSON.stringify(removed.body)}`).toBe(200)
        const { records } = await pullAll(acme, path, start)
        const pulled = records.map((r) => r.id)
        expect(new Set(pulled).size, path).toBe(pulled.length)
        expect(pulled, path).toEqual(expect.arrayContaining(ids))
        expect(records.find((r) => r.id === ids[1]).deleted_at, path).toEqual(expect.any(String))
        const order = records.map((r) => [Date.parse(r.updated_at), r.id])
        expect(order, path).toEqual([...order].sort((a, b) => a[0] - b[0] || a[1] - b[1]))
      }
    })

    it('when $after pages run in descending order, then they walk back from the cursor', async () => {
      const made = [await contact(acme, { first_name: 'D1' }), await contact(acme, { first_name: 'D2' }), await contact(acme, { first_name: 'D3' })]
      const last = made[2]
      const res = await list(acme, '/contacts', { $after: { updated_at: last.updated_at, id: last.id }, $sort: { updated_at: -1, id: -1 }, $limit: 2 })
      expect(res.status).toBe(200)
      expect(res.body.data.map((r: any) => r.id)).toEqual([made[1].id, made[0].id])
      expect(res.body).not.toHaveProperty('total')
    })

    it('when $after is malformed, combined with $skip or sorted otherwise, then 400 naming the parameter', async () => {
      const cursor = { updated_at: new Date().toISOString(), id: 1 }
      const cases: [Record<string, unknown>, string][] = [
        [{ $after: { updated_at: cursor.updated_at } }, '$after'],
        [{ $after: { id: 1 } }, '$after'],
        [{ $after: { updated_at: 'yesterday', id: 1 } }, '$after.updated_at'],
        [{ $after: cursor, $skip: 10 }, '$after'],
        [{ $after: cursor, $sort: { created_at: 1 } }, '$sort'],
        [{ $after: cursor, $sort: { updated_at: 1, id: -1 } }, '$sort'],
        [{ $after: cursor, $sort: { id: 1, updated_at: 1 } }, '$sort']
      ]
      for (const [query, field] of cases) {
        const res = await list(acme, '/contacts', query)
        expect(res.status, JSON.stringify(query)).toBe(400)
        expect(Object.keys(res.body.errors).some((key) => key.startsWith(field)), `${JSON.stringify(query)} ${JSON.stringify(res.body.errors)}`).toBe(true)
      }
    })

    it("when another organization's deleted records exist, then $withDeleted never lists them, and naming that organization is a 403", async () => {
      const theirs = await contact(other, { first_name: 'Theirs' })
      await t.http().delete(`/contacts/${theirs.id}`).set(other.key).expect(200)
      const pulled = await pullAll(acme, '/contacts', { updated_at: '2000-01-01T00:00:00.000Z', id: 0 }, 50)
      expect(pulled.records.length).toBeGreaterThan(0)
      expect(pulled.records.every((r) => r.organization_id === acme.organization.id)).toBe(true)
      const named = await list(acme, '/contacts', { organization_id: other.organization.id, $withDeleted: true })
      expect(named.status).toBe(403)
      const byQueryString = await t.http().get(`/contacts?$withDeleted=true&organization_id=${other.organization.id}`).set(acme.key)
      expect(byQueryString.status).toBe(403)
    })

    it('when the query string carries $withDeleted and $after, then they are read as a boolean and a cursor', async () => {
      const made = await contact(acme, { first_name: 'Querystring' })
      await t.http().delete(`/contacts/${made.id}`).set(acme.key).expect(200)
      const after = new Date(Date.parse(made.updated_at) - 1).toISOString()
      const res = await t.http().get(`/contacts?$withDeleted=true&$after[updated_at]=${encodeURIComponent(after)}&$after[id]=0&$limit=50`).set(acme.key)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((r: any) => r.id)).toContain(made.id)
    })
  })

  describe('$select', () => {
    it('when a list and a get name fields, then only those fields and id are returned', async () => {
      const made = await contact(acme, { first_name: 'Selma', last_name: 'Lagerlof', email: 'selma@example.test' })
      const listed = await list(acme, '/contacts', { id: made.id, $select: ['first_name', 'email'] })
      expect(listed.status, JSON.stringify(listed.body)).toBe(200)
      expect(listed.body.data).toEqual([{ id: made.id, first_name: 'Selma', email: 'selma@example.test' }])
      const read = await t.http().get(`/contacts/${made.id}?$select[]=last_name`).set(acme.key)
      expect(read.status, JSON.stringify(read.body)).toBe(200)
      expect(read.body).toEqual({ id: made.id, last_name: 'Lagerlof' })
    })

    it('when $select names a joined object, then it is attached without the list flag', async () => {
      const company = created(await t.http().post('/companies').set(acme.key).send({ name: 'Joined Co' }))
      const made = await contact(acme, { first_name: 'Joan', company_id: company.id })
      const listed = await list(acme, '/contacts', { id: made.id, $select: ['first_name', 'company'] })
      expect(listed.status, JSON.stringify(listed.body)).toBe(200)
      expect(listed.body.data).toEqual([{ id: made.id, first_name: 'Joan', company: { id: company.id, name: 'Joined Co' } }])
    })

    it('when $select names custom_fields_by_name, then the values come by name', async () => {
      await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'tier', name: 'Tier', field_type: 'text' }).expect(201)
      const made = await contact(acme, { first_name: 'Tiered', custom_fields_by_name: { Tier: 'gold' } })
      const listed = await list(acme, '/contacts', { id: made.id, $select: ['custom_fields_by_name'] })
      expect(listed.body.data).toEqual([{ id: made.id, custom_fields_by_name: { Tier: 'gold' } }])
    })

    it('when $select names an unknown or storage field, then 400 naming it', async () => {
      for (const field of ['nope', 'custom_fields', 'phone_normalized']) {
        const listed = await list(acme, '/contacts', { $select: ['first_name', field] })
        expect(listed.status, field).toBe(400)
        expect(listed.body.errors).toEqual({ [`$select.${field}`]: 'is not a field of this resource' })
      }
      const read = await t.http().get(`/companies/1?$select[]=secret`).set(acme.key)
      expect(read.status).toBe(400)
      expect(read.body.errors).toEqual({ '$select.secret': 'is not a field of this resource' })
    })
  })

  describe('$or', () => {
    it('when $or has two branches of ordinary filters, then records matching either are listed', async () => {
      const a = await contact(acme, { first_name: 'Orla', email: 'orla@example.test' })
      const b = await contact(acme, { first_name: 'Oscar', last_name: 'Orbison' })
      await contact(acme, { first_name: 'Otto' })
      const res = await list(acme, '/contacts', { $or: [{ email: 'orla@example.test' }, { last_name: { $ilike: 'orbi%' } }], $sort: { id: 1 } })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((r: any) => r.id)).toEqual([a.id, b.id])
      expect(res.body.total).toBe(2)
    })

    it(`when $or has more than ${MAX_OR_BRANCHES} branches, an undeclared column or an operator a branch does not allow, then 400`, async () => {
      const branches = Array.from({ length: MAX_OR_BRANCHES + 1 }, (_, i) => ({ first_name: `N${i}` }))
      const tooMany = await list(acme, '/contacts', { $or: branches })
      expect(tooMany.status).toBe(400)
      expect(Object.keys(tooMany.body.errors)[0]).toMatch(/^\$or/)
      expect((await list(acme, '/contacts', { $or: branches.slice(0, MAX_OR_BRANCHES) })).status).toBe(200)
      for (const branch of [{ phone_normalized: '1' }, { first_name: { $where: 'x' } }, { $or: [{ first_name: 'x' }] }, {}]) {
        const res = await list(acme, '/contacts', { $or: [{ first_name: 'x' }, branch] })
        expect(res.status, JSON.stringify(branch)).toBe(400)
      }
    })

    it('when an internal call puts an undeclared column in an $or branch, then the record layer refuses it with a 400 naming the column', async () => {
      const service = t.app.service('contacts') as any
      const refused = await service._find({ query: { organization_id: acme.organization.id, $or: [{ first_name: 'x' }, { no_such_column: 1 }] } }).catch((error: any) => error)
      expect(refused).toMatchObject({ name: 'BadRequest', errors: { no_such_column: 'is not a field you can filter on' } })
    })

    it("when an $or branch names another organization, then nothing of that organization is listed", async () => {
      const theirs = await contact(other, { first_name: 'Hidden' })
      const res = await list(acme, '/contacts', { $or: [{ organization_id: other.organization.id }, { id: theirs.id }] })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual([])
    })
  })

  describe('custom-field filters', () => {
    let tenant: Tenant
    const ids: Record<string, number> = {}

    beforeAll(async () => {
      tenant = await createTenant(t, 'Fields')
      const define = (body: Record<string, unknown>) => t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'contact', ...body }).expect(201)
      await define({ key: 'budget', name: 'Budget', field_type: 'number' })
      await define({ key: 'renewal', name: 'Renewal date', field_type: 'date' })
      await define({ key: 'plan', name: 'Plan', field_type: 'select', options: ['free', 'pro', 'team'] })
      await define({ key: 'tags', name: 'Tags', field_type: 'multiselect', options: ['vip', 'new'] })
      await define({ key: 'vip', name: 'VIP', field_type: 'boolean' })
      const rows: [string, Record<string, unknown>][] = [
        ['small', { Budget: 100, 'Renewal date': '2026-01-15', Plan: 'free', Tags: ['new'], VIP: false }],
        ['medium', { Budget: 2500.5, 'Renewal date': '2026-06-01', Plan: 'pro', Tags: ['vip', 'new'] }],
        ['large', { Budget: 90000, 'Renewal date': '2027-02-01', Plan: 'team', VIP: true }],
        ['none', {}]
      ]
      for (const [name, values] of rows) ids[name] = (await contact(tenant, { first_name: name, custom_fields_by_name: values })).id
      // Another organization with the same field names and values: never listed.
      await t.http().post('/custom-fields').set(other.key).send({ entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' }).expect(201)
      await contact(other, { first_name: 'foreign', custom_fields_by_name: { Budget: 2500.5 } })
    })

    const found = async (query: Record<string, unknown>) => {
      const res = await list(tenant, '/contacts', { ...query, $sort: { id: 1 }, $limit: 50 })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body.data.map((r: any) => r.first_name)
    }

    it('when a custom field is filtered by equality or $in, then the matching records are listed', async () => {
      expect(await found({ 'custom_fields_by_name.Plan': 'pro' })).toEqual(['medium'])
      expect(await found({ 'custom_fields_by_name.Plan': { $in: ['free', 'team'] } })).toEqual(['small', 'large'])
      expect(await found({ 'custom_fields_by_name.Budget': 2500.5 })).toEqual(['medium'])
      expect(await found({ 'custom_fields_by_name.VIP': true })).toEqual(['large'])
      expect(await found({ 'custom_fields_by_name.Tags': 'vip' })).toEqual(['medium'])
      expect(await found({ 'custom_fields_by_name.Tags': { $in: ['vip', 'new'] } })).toEqual(['small', 'medium'])
    })

    it('when a number or date field is filtered by a range, then the records in the range are listed', async () => {
      expect(await found({ 'custom_fields_by_name.Budget': { $gt: 100 } })).toEqual(['medium', 'large'])
      expect(await found({ 'custom_fields_by_name.Budget': { $gte: 100, $lt: 90000 } })).toEqual(['small', 'medium'])
      expect(await found({ 'custom_fields_by_name.Renewal date': { $gte: '2026-06-01', $lte: '2026-12-31' } })).toEqual(['medium'])
      expect(await found({ 'custom_fields_by_name.Renewal date': { $lt: '2026-06-01' }, 'custom_fields_by_name.Plan': 'free' })).toEqual(['small'])
    })

    it('when a filter comes in the query string, then its text is read as the field type', async () => {
      const res = await t.http().get(`/contacts?${encodeURIComponent('custom_fields_by_name.Budget')}[$lte]=2500.5&${encodeURIComponent('custom_fields_by_name.VIP')}=false`).set(tenant.key)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((r: any) => r.first_name)).toEqual(['small'])
    })

    it('when a value changes or a record is deleted, then the range filter follows', async () => {
      await t.http().patch(`/contacts/${ids.none}`).set(tenant.key).send({ custom_fields_by_name: { Budget: 5000 } }).expect(200)
      expect(await found({ 'custom_fields_by_name.Budget': { $gt: 3000, $lt: 10000 } })).toEqual(['none'])
      await t.http().patch(`/contacts/${ids.none}`).set(tenant.key).send({ custom_fields_by_name: { Budget: null } }).expect(200)
      expect(await found({ 'custom_fields_by_name.Budget': { $gt: 3000, $lt: 10000 } })).toEqual([])
    })

    it('when the field is unknown, of another organization, or the operator does not fit its type, then 400 naming the filter', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ 'custom_fields_by_name.Nope': 1 }, 'custom_fields_by_name.Nope'],
        [{ 'custom_fields_by_name.Plan': { $gt: 'free' } }, 'custom_fields_by_name.Plan'],
        [{ 'custom_fields_by_name.Plan': 'enterprise' }, 'custom_fields_by_name.Plan'],
        [{ 'custom_fields_by_name.Budget': 'lots' }, 'custom_fields_by_name.Budget'],
        [{ 'custom_fields_by_name.Budget': { $ne: 1 } }, 'custom_fields_by_name.Budget'],
        [{ 'custom_fields_by_name.Renewal date': { $gt: '2026-02-30' } }, 'custom_fields_by_name.Renewal date']
      ]
      for (const [query, field] of cases) {
        const res = await list(tenant, '/contacts', query)
        expect(res.status, JSON.stringify(query)).toBe(400)
        expect(Object.keys(res.body.errors), JSON.stringify(query)).toEqual([field])
      }
      // Acme has no Budget field of its own: the other organization's definition does not count.
      const foreign = await list(acme, '/contacts', { 'custom_fields_by_name.Renewal date': '2026-01-15' })
      expect(foreign.status).toBe(400)
    })

    it('when a resource has no custom fields by name, then such a filter is a 400, never SQL', async () => {
      const res = await list(tenant, '/products', { 'custom_fields_by_name.Budget': 1 })
      expect(res.status).toBe(400)
    })

    it('when many contacts carry values, then each custom-field filter finds the exact total', async () => {
      const organizationId = tenant.organization.id
      await t.db.raw(
        `INSERT INTO contacts (organization_id, first_name, custom_fields)
         SELECT ?, 'bulk', jsonb_build_object('budget', i, 'plan', CASE WHEN i % 1000 = 0 THEN 'pro' ELSE 'free' END, 'renewal', to_char(date '2026-01-01' + i % 700, 'YYYY-MM-DD'))
         FROM generate_series(1, 5000) AS i`,
        [organizationId]
      )
      const readsOf = async (query: Record<string, unknown>) => {
        const res = await list(tenant, '/contacts', { ...query, $limit: 5 })
        expect(res.status).toBe(200)
        return { res }
      }
      const equality = await readsOf({ 'custom_fields_by_name.Plan': 'pro' })
      expect(equality.res.body.total).toBe(6)
      const range = await readsOf({ 'custom_fields_by_name.Budget': { $gte: 10, $lt: 20 } })
      expect(range.res.body.total).toBe(10)
      const dates = await readsOf({ 'custom_fields_by_name.Renewal date': { $gte: '2026-01-02', $lte: '2026-01-03' } })
      expect(dates.res.body.total).toBe(Math.floor(5000 / 700) * 2 + 2)
    })
  })

  describe('the updated_at order', () => {
    it('when a $withDeleted keyset page is read on a large organization, then its plan walks an index and stops at the page, without a sequential scan', async () => {
      const tenant = await createTenant(t, 'Large')
      await t.db.raw(
        `INSERT INTO contacts (organization_id, first_name, updated_at, deleted_at)
         SELECT ?, 'row ' || i, now() - i * interval '1 second', CASE WHEN i % 10 = 0 THEN now() END FROM generate_series(1, 20000) AS i`,
        [tenant.organization.id]
      )
      await t.db.raw('ANALYZE contacts')
      const after = { updated_at: new Date(Date.now() - 10_000 * 1000).toISOString(), id: 0 }
      const query = { $withDeleted: true, $after: after, $limit: 100 }
      await list(tenant, '/contacts', query)
      const { result, plan } = await planOfCall(t.app.get('knex'), () => list(tenant, '/contacts', query))
      expect(result.status).toBe(200)
      expect(result.body.data).toHaveLength(100)
      expect(result.body.data.some((r: any) => r.deleted_at !== null)).toBe(true)
      const order = result.body.data.map((r: any) => [Date.parse(r.updated_at), r.id])
      expect(order).toEqual([...order].sort((x, y) => x[0] - y[0] || x[1] - y[1]))
      expect(Date.parse(result.body.data[0].updated_at)).toBeGreaterThanOrEqual(Date.parse(after.updated_at))
      expect(result.body.next).toEqual({ updated_at: result.body.data[99].updated_at, id: result.body.data[99].id })
      expect(plan, plan).not.toContain('Seq Scan')
      // The page's limit reads straight from an index scan: the organization's rows are not sorted.
      expect(plan, plan).toMatch(/Limit .*\n\s*->\s+Index (Only )?Scan/)
    })

    it('when a list is ordered by updated_at or filtered on it (in $or too), then its records, order and total are those of the records', async () => {
      const tenant = await createTenant(t, 'Ordered')
      const people = []
      for (const first_name of ['Uma', 'Ugo', 'Una', 'Ula']) people.push(await contact(tenant, { first_name }))
      const touched = await t.http().patch(`/contacts/${people[1].id}`).set(tenant.key).send({ last_name: 'Later' })
      expect(touched.status).toBe(200)
      await t.http().delete(`/contacts/${people[2].id}`).set(tenant.key)

      const newest = await list(tenant, '/contacts', { $sort: { updated_at: -1 }, $limit: 2 })
      expect(newest.status, JSON.stringify(newest.body)).toBe(200)
      expect(newest.body.total).toBe(3)
      expect(newest.body.data.map((r: any) => r.id)).toEqual([people[1].id, people[3].id])

      const since = people[3].updated_at
      const either = await list(tenant, '/contacts', { $or: [{ updated_at: { $gt: since } }, { first_name: 'Uma' }], $sort: { updated_at: 1, id: 1 } })
      expect(either.status, JSON.stringify(either.body)).toBe(200)
      expect(either.body.data.map((r: any) => r.id)).toEqual([people[0].id, people[1].id])
      expect(either.body.total).toBe(2)

      const filtered = await list(tenant, '/contacts', { updated_at: { $gt: since }, $withDeleted: true })
      expect(filtered.body.data.map((r: any) => r.id)).toEqual([people[1].id, people[2].id])
      expect(filtered.body.total).toBe(2)
    })
  })
  describe('the OpenAPI document', () => {
    it('when the document is read, then lists show the sync parameters and contacts its duplicate methods', async () => {
      const doc = (await t.http().get('/openapi.json')).body
      for (const path of ['/companies', '/contacts', '/deals', '/deal-products', '/activities', '/products']) {
        const names = doc.paths[path].get.parameters.map((p: any) => p.name)
        // $or is described in the list's text (a form would pre-fill it with a sample the API refuses).
        expect(names, path).toEqual(expect.arrayContaining(['$select', '$after[updated_at]', '$after[id]', '$withDeleted']))
        expect(doc.paths[path].get.description, path).toContain('$or')
        expect(doc.paths[path].get.responses[200].content['application/json'].schema.properties, path).toHaveProperty('next')
      }
      expect(doc.paths['/contacts'].get.parameters.map((p: any) => p.name)).toContain('custom_fields_by_name.<name>')
      expect(doc.paths['/products'].get.parameters.map((p: any) => p.name)).not.toContain('custom_fields_by_name.<name>')
      expect(doc.paths['/contacts#find-duplicates'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ContactDuplicateSearch' })
      expect(doc.paths['/contacts#merge'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ContactMerge' })
      expect(doc.components.schemas.ApiKeyData.properties).toHaveProperty('scopes')
      expect(doc.components.schemas.ApiKeyData.properties).toHaveProperty('expires_at')
    })
  })
})
