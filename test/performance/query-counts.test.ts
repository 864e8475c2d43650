import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * No query per row, anywhere: every list with joins and every single read with joins runs the
 * same number of SQL statements for a small and a large page (or a record with few and many
 * related rows). Also the exact envelope total, read from the per-organization counter when a
 * list is filtered by organization only.
 */
describe('query counts', () => {
  let t: TestApp
  let tenant: Tenant
  const PAGE = 12

  const created = (res: { status: number; body: any }, what: string) => {
    if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
  const list = (path: string, query: Record<string, unknown>) => t.http().get(path).set(tenant.key).send({ query })

  /** The statements of one call at two page sizes; a first call pays for once-a-minute writes such as last_used_at. */
  async function atTwoPageSizes(path: string, query: Record<string, unknown>) {
    await list(path, { ...query, $limit: 1 })
    const small = await countQueries(t.db, () => list(path, { ...query, $limit: 2 }))
    const large = await countQueries(t.db, () => list(path, { ...query, $limit: PAGE }))
    expect(small.result.status, JSON.stringify(small.result.body)).toBe(200)
    expect(large.result.body.data).toHaveLength(PAGE)
    return { small, large }
  }

  const ids: Record<string, number[]> = { companies: [], contacts: [], deals: [], activities: [] }
  let dealWithOneProduct: number
  let dealWithSixProducts: number
  let typeWithOneActivity: number
  let typeWithFiveActivities: number

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Counts')
    const member = await addMember(t, tenant, 'member')
    const owners = [tenant.user.id, member.user.id]
    const post = (path: string, body: Record<string, unknown>) => t.http().post(path).set(tenant.key).send(body)

    const pipeline = created(await post('/pipelines', { name: 'Sales' }), 'pipeline')
    const stages = []
    for (const [position, name] of ['Lead', 'Proposal', 'Won'].entries()) {
      stages.push(created(await post('/pipeline-stages', { pipeline_id: pipeline.id, name, position }), 'stage'))
    }
    const products = []
    for (let i = 0; i < 6; i++) products.push(created(await post('/products', { name: `Seat ${i}`, sku: `SEAT-${i}`, price: 10 + i }), 'product'))

    // Every row of a page points at different related records, so a query per row would show.
    for (let i = 0; i < PAGE; i++) {
      const owner = owners[i % 2]
      const company = created(await post('/companies', { name: `Company ${i}`, owned_by_user_id: owner }), 'company')
      const contact = created(await post('/contacts', { first_name: `Person ${i}`, last_name: 'Count', company_id: company.id, owned_by_user_id: owner }), 'contact')
      const deal = created(await post('/deals', {
        name: `Deal ${i}`, amount: 100 + i, currency: 'EUR', status: 'open', pipeline_id: pipeline.id,
        pipeline_stage_id: stages[i % 3].id, contact_id: contact.id, company_id: company.id, owned_by_user_id: owner
      }), 'deal')
      const activity = created(await post('/activities', {
        subject: `Call ${i}`, start_date: `2026-03-${String(2 + (i % 5)).padStart(2, '0')}`, assigned_to_user_id: owners[(i + 1) % 2],
        deal_id: deal.id, contact_id: contact.id, company_id: company.id, activity_type: 'call'
      }), 'activity')
      ids.companies.push(company.id)
      ids.contacts.push(contact.id)
      ids.deals.push(deal.id)
      ids.activities.push(activity.id)
    }

    dealWithOneProduct = ids.deals[0]
    dealWithSixProducts = ids.deals[1]
    created(await post('/deal-products', { deal_id: dealWithOneProduct, product_id: products[0].id, quantity: 1, price: 10 }), 'deal product')
    for (const product of products) {
      created(await post('/deal-products', { deal_id: dealWithSixProducts, product_id: product.id, quantity: 2, price: 10 }), 'deal product')
    }

    const one = created(await post('/activity-types', { name: 'Demo', color: '#123456', icon_key: 'video' }), 'activity type')
    const five = created(await post('/activity-types', { name: 'Workshop', color: '#654321', icon_key: 'users' }), 'activity type')
    typeWithOneActivity = one.id
    typeWithFiveActivities = five.id
    created(await post('/activities', { subject: 'Demo', activity_type: 'Demo' }), 'activity')
    for (let i = 0; i < 5; i++) created(await post('/activities', { subject: `Workshop ${i}`, activity_type: 'Workshop' }), 'activity')
  })

  afterAll(async () => {
    await t?.close()
  })

  describe('lists with joins', () => {
    it('when companies are listed with fastJoinForCompanyList, then a page of 12 costs as many queries as a page of 2', async () => {
      const { small, large } = await atTwoPageSizes('/companies', { fastJoinForCompanyList: true })
      expect(large.result.body.data.every((row: any) => row.creator && row.owner)).toBe(true)
      expect(large.count).toBe(small.count)
    })

    it('when contacts are listed with fastJoinForContactList, then a page of 12 costs as many queries as a page of 2', async () => {
      const { small, large } = await atTwoPageSizes('/contacts', { fastJoinForContactList: true })
      expect(large.result.body.data.every((row: any) => row.company && row.owner)).toBe(true)
      expect(large.count).toBe(small.count)
    })

    it('when deals are listed with fastJoinForDealsList, then a page of 12 costs as many queries as a page of 2', async () => {
      const { small, large } = await atTwoPageSizes('/deals', { fastJoinForDealsList: true })
      expect(large.result.body.data.every((row: any) => row.company && row.contact && row.owner && row.pipelineStage)).toBe(true)
      expect(large.count).toBe(small.count)
    })

    it('when activities are listed with fastJoinForActivityList, then a page of 12 costs as many queries as a page of 2', async () => {
      const { small, large } = await atTwoPageSizes('/activities', {
        fastJoinForActivityList: true, start_date: { $gte: '2026-03-01', $lte: '2026-03-31' }
      })
      expect(large.result.body.data.every((row: any) => row.deal && row.contact && row.company && row.assigned_to_user && row.created_by_user)).toBe(true)
      expect(large.count).toBe(small.count)
    })
  })

  describe('single reads with joins', () => {
    it('when a deal with six deal products is read, then it costs as many queries as a deal with one', async () => {
      await t.http().get(`/deals/${dealWithOneProduct}`).set(tenant.key)
      const one = await countQueries(t.db, () => t.http().get(`/deals/${dealWithOneProduct}`).set(tenant.key))
      const six = await countQueries(t.db, () => t.http().get(`/deals/${dealWithSixProducts}`).set(tenant.key))
      expect(one.result.body.dealProducts).toHaveLength(1)
      expect(six.result.body.dealProducts).toHaveLength(6)
      expect(six.result.body).toMatchObject({ pipeline: expect.any(Object), pipelineStage: expect.any(Object), company: expect.any(Object), contact: expect.any(Object), owner: expect.any(Object) })
      expect(six.count).toBe(one.count)
    })

    it('when two activities with all their relations are read, then each read costs the same number of queries', async () => {
      await t.http().get(`/activities/${ids.activities[0]}`).set(tenant.key)
      const first = await countQueries(t.db, () => t.http().get(`/activities/${ids.activities[0]}`).set(tenant.key))
      const last = await countQueries(t.db, () => t.http().get(`/activities/${ids.activities[PAGE - 1]}`).set(tenant.key))
      expect(last.result.body).toMatchObject({ deal: expect.any(Object), contact: expect.any(Object), company: expect.any(Object), assigned_to_user: expect.any(Object) })
      expect(last.count).toBe(first.count)
    })

    it('when an activity type with five activities is read, then activities_count costs as many queries as with one', async () => {
      await t.http().get(`/activity-types/${typeWithOneActivity}`).set(tenant.key)
      const one = await countQueries(t.db, () => t.http().get(`/activity-types/${typeWithOneActivity}`).set(tenant.key))
      const five = await countQueries(t.db, () => t.http().get(`/activity-types/${typeWithFiveActivities}`).set(tenant.key))
      expect(one.result.body.activities_count).toBe(1)
      expect(five.result.body.activities_count).toBe(5)
      expect(five.count).toBe(one.count)
    })
  })

  describe('exact totals', () => {
    const liveRows = async (table: string, organizationId: number) =>
      Number((await t.db(table).where({ organization_id: organizationId }).whereNull('deleted_at').count({ n: '*' }))[0].n)

    it('when a list is filtered by organization only, then its total is the live-record counter (record_counts); with any other filter it is counted', async () => {
      const organizationId = tenant.organization.id
      for (const path of ['companies', 'contacts', 'deals', 'activities']) {
        const live = await liveRows(path, organizationId)
        const first = await list(`/${path}`, {})
        expect(first.body.total, path).toBe(live)
        // A counter moved by hand shows through the whole list only: it is what the total reads.
        await t.db('record_counts').insert({ organization_id: organizationId, table_name: path, slot: 99, live: 1000 })
        try {
          expect((await list(`/${path}`, {})).body.total, path).toBe(live + 1000)
          // Every record here was created by the key's user: the same records, counted.
          expect((await list(`/${path}`, { created_by_user_id: tenant.user.id })).body.total, path).toBe(live)
        } finally {
          await t.db('record_counts').where({ organization_id: organizationId, table_name: path, slot: 99 }).delete()
        }
      }
    })

    it('when contacts are created and soft-deleted, then the organization-wide total follows exactly', async () => {
      const fresh = await createTenant(t, 'Totals')
      const totalOf = async () => (await t.http().get('/contacts').set(fresh.key).send({ query: {} })).body.total
      expect(await totalOf()).toBe(0)
      const made = []
      for (const name of ['Ann', 'Bob', 'Cid']) made.push((await t.http().post('/contacts').set(fresh.key).send({ first_name: name })).body)
      expect(await totalOf()).toBe(3)
      await t.http().delete(`/contacts/${made[1].id}`).set(fresh.key).expect(200)
      expect(await totalOf()).toBe(2)
      // Deleting again changes nothing (404), and a patch of a live row leaves the count alone.
      await t.http().delete(`/contacts/${made[1].id}`).set(fresh.key).expect(404)
      await t.http().patch(`/contacts/${made[0].id}`).set(fresh.key).send({ last_name: 'Lee' }).expect(200)
      expect(await totalOf()).toBe(2)
      expect(await liveRows('contacts', fresh.organization.id)).toBe(2)
      // Other organizations' rows never leak into the total.
      expect((await list('/contacts', {})).body.total).toBe(await liveRows('contacts', tenant.organization.id))
    })

    it("when a record is read by id, then one statement reads it, without its hidden columns, and another organization's record is a 404", async () => {
      const contact = created(await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Prepared', last_name: 'Read' }), 'contact')
      const other = await createTenant(t, 'Elsewhere')
      await t.http().get(`/contacts/${contact.id}`).set(tenant.key).expect(200)
      const { result, count } = await countQueries(t.db, () => t.http().get(`/contacts/${contact.id}`).set(tenant.key))
      expect(result.body).toMatchObject({ id: contact.id, first_name: 'Prepared', last_name: 'Read', organization_id: tenant.organization.id })
      expect(result.body).not.toHaveProperty('search_name')
      expect(count).toBe(1)
      expect((await t.http().get(`/contacts/${contact.id}`).set(other.key)).status).toBe(404)
      await t.http().delete(`/contacts/${contact.id}`).set(tenant.key).expect(200)
      expect((await t.http().get(`/contacts/${contact.id}`).set(tenant.key)).status).toBe(404)
    })

    it("when a list asks for one organization's records, then each page is one statement with the rows, order and total of the organization's live records", async () => {
      const other = await createTenant(t, 'Elsewhere too')
      await t.http().post('/contacts').set(other.key).send({ first_name: 'Not', last_name: 'Yours' }).expect(201)
      const live = (await t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').orderBy('id').select('id')).map((row) => row.id)
      expect(live.length).toBeGreaterThan(10)
      await list('/contacts', { $limit: 1 })
      for (const $skip of [0, 5, 10]) {
        const { result, count } = await countQueries(t.db, () => list('/contacts', { $limit: 5, $skip }))
        expect(result.body).toMatchObject({ total: live.length, limit: 5, skip: $skip })
        expect(result.body.data.map((row: any) => row.id)).toEqual(live.slice($skip, $skip + 5))
        expect(result.body.data[0]).not.toHaveProperty('search_name')
        expect(count).toBe(1)
      }
      const past = await list('/contacts', { $limit: 5, $skip: live.length + 5 })
      expect(past.body).toMatchObject({ total: live.length, skip: live.length + 5, data: [] })
      // Another organization's page holds its own records only; naming it is refused.
      const theirs = await t.http().get('/contacts').set(other.key).send({ query: {} })
      expect(theirs.body.total).toBe(1)
      expect(theirs.body.data.map((row: any) => row.last_name)).toEqual(['Yours'])
      expect((await list('/contacts', { organization_id: other.organization.id })).status).toBe(403)
    })
  })
})
