import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * A page holds the organization's live records in order, with the exact total: read from the
 * per-organization counter (record_counts) when a list is filtered by organization only, counted
 * otherwise. A read by id answers the record without its hidden columns, in its organization only.
 */
describe('pages and reads by id', () => {
  let t: TestApp
  let tenant: Tenant

  const list = (path: string, query: Record<string, unknown>, by: Tenant = tenant) => t.http().get(path).set(by.key).send({ query })
  const liveRows = async (table: string, organizationId: number) =>
    Number((await t.db(table).where({ organization_id: organizationId }).whereNull('deleted_at').count({ n: '*' }))[0].n)

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Pages')
    const post = async (path: string, body: unknown) => {
      const res = await t.http().post(path).set(tenant.key).send(body as object)
      if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
      return res.body
    }
    const companies = await post('/companies', Array.from({ length: 3 }, (_v, i) => ({ name: `Company ${i}` })))
    await post('/contacts', Array.from({ length: 12 }, (_v, i) => ({ first_name: `Person ${i}`, last_name: 'Paged', company_id: companies[i % 3].id })))
    const pipeline = await post('/pipelines', { name: 'Sales' })
    const stage = await post('/pipeline-stages', { pipeline_id: pipeline.id, name: 'Lead', position: 0 })
    await post('/deals', { name: 'Deal', amount: 100, currency: 'EUR', status: 'open', pipeline_id: pipeline.id, pipeline_stage_id: stage.id })
    await post('/activities', { subject: 'Call', activity_type: 'call' })
  })
  afterAll(async () => {
    await t?.close()
  })

  it('when a list is filtered by organization only, then its total is the live-record counter (record_counts); with any other filter it is counted', async () => {
    const organizationId = tenant.organization.id
    for (const path of ['companies', 'contacts', 'deals', 'activities']) {
      const live = await liveRows(path, organizationId)
      expect((await list(`/${path}`, {})).body.total, path).toBe(live)
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
    const totalOf = async () => (await list('/contacts', {}, fresh)).body.total
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

  it("when a record is read by id, then it comes without its hidden columns, and another organization's record, or a deleted one, is a 404", async () => {
    const contact = (await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Single', last_name: 'Read' }).expect(201)).body
    const other = await createTenant(t, 'Elsewhere')
    const read = await t.http().get(`/contacts/${contact.id}`).set(tenant.key)
    expect(read.body).toMatchObject({ id: contact.id, first_name: 'Single', last_name: 'Read', organization_id: tenant.organization.id })
    expect(read.body).not.toHaveProperty('search_name')
    expect((await t.http().get(`/contacts/${contact.id}`).set(other.key)).status).toBe(404)
    await t.http().delete(`/contacts/${contact.id}`).set(tenant.key).expect(200)
    expect((await t.http().get(`/contacts/${contact.id}`).set(tenant.key)).status).toBe(404)
  })

  it("when a list asks for one organization's records, then each page holds the rows, order and total of the organization's live records", async () => {
    const other = await createTenant(t, 'Elsewhere too')
    await t.http().post('/contacts').set(other.key).send({ first_name: 'Not', last_name: 'Yours' }).expect(201)
    const live = (await t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').orderBy('id').select('id')).map((row) => row.id)
    expect(live.length).toBeGreaterThan(10)
    for (const $skip of [0, 5, 10]) {
      const page = await list('/contacts', { $limit: 5, $skip })
      expect(page.body).toMatchObject({ total: live.length, limit: 5, skip: $skip })
      expect(page.body.data.map((row: any) => row.id)).toEqual(live.slice($skip, $skip + 5))
      expect(page.body.data[0]).not.toHaveProperty('search_name')
    }
    const past = await list('/contacts', { $limit: 5, $skip: live.length + 5 })
    expect(past.body).toMatchObject({ total: live.length, skip: live.length + 5, data: [] })
    // Another organization's page holds its own records only; naming it is refused.
    const theirs = await list('/contacts', {}, other)
    expect(theirs.body.total).toBe(1)
    expect(theirs.body.data.map((row: any) => row.last_name)).toEqual(['Yours'])
    expect((await list('/contacts', { organization_id: other.organization.id })).status).toBe(403)
  })
})
