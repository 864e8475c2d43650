import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { isEmbedded } from '../../src/db.js'
import { MIN_HIT_RATE, PAUSE_MS, RecordPages, YIELD_WINDOW, recordPagesOf } from '../../src/services/record-pages.js'

/**
 * Whole list pages kept under their tables' change mark (src/services/record-pages.ts): a page
 * asked again costs one statement (the mark) while no row it could show has been written, and is
 * read afresh, exactly as the usual path answers it, after any committed write of its own table,
 * a relation's table, a user or a custom-field definition. Pages are kept on a Postgres server
 * only (wire pages); on the embedded database every page takes the usual path and the answers
 * are still compared.
 */
describe('kept pages', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant
  let companyId: number
  let contactId: number
  let dealIds: number[]
  let activityIds: number[]
  let otherCompanyId: number

  const ok = <T>(res: { status: number; body: T }, status = 200) => {
    if (res.status !== status) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    return res.body as any
  }
  const list = (path: string, query: Record<string, unknown>, as: Tenant = tenant) =>
    t.http().get(path).set(as.key).send({ query: { organization_id: as.organization.id, ...query } })
  const patch = (path: string, id: number, body: Record<string, unknown>, as: Tenant = tenant) => t.http().patch(`${path}/${id}`).set(as.key).send(body)

  const WEEK = { start_date: { $gte: '2026-03-02', $lte: '2026-03-08' }, fastJoinForActivityList: true }
  const DEALS = { fastJoinForDealsList: true, $limit: 50 }

  /** The page as served now (its statements counted), and as the usual path reads it with no page kept. */
  async function page(path: string, query: Record<string, unknown>, as: Tenant = tenant) {
    const { result, sql } = await countQueries(t.db, () => list(path, query, as), { keepTexts: true })
    const pages = recordPagesOf(t.db)
    const service = t.app.service(path.slice(1) as any) as any
    const shape = service.options.wire
    service.options.wire = undefined
    try {
      const usual = ok(await list(path, query, as))
      expect(ok(result), `${path} as the usual path answers it`).toEqual(usual)
    } finally {
      service.options.wire = shape
    }
    return { body: result.body, statements: sql.length, kept: pages.size, read: sql.some((text) => text.includes('crm_page_total')) }
  }
  /** The statements of a page answered from a kept one: its tables' mark (any number on the embedded database). */
  const fromKept = () => (isEmbedded(t.db) ? expect.anything() : { statements: 1, read: false })
  /** A page read afresh: its statement ran (on a server; the embedded database always reads it). */
  const readAgain = () => ({ read: true })

  /** A write, named, and what the page read after it shows. */
  type Step = [string, () => Promise<unknown>, (body: any) => void]
  /** After each write, the page is read afresh (and shows it), then kept again. */
  async function expectReadAgainAfterEach(path: string, query: Record<string, unknown>, steps: Step[]) {
    for (const [step, write, check] of steps) {
      await write()
      const after = await page(path, query)
      expect(after, step).toMatchObject(readAgain())
      check(after.body)
      expect(await page(path, query), step).toMatchObject(fromKept())
    }
  }

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Kept pages')
    other = await createTenant(t, 'Kept pages elsewhere')
    await addMember(t, tenant, 'member')
    const post = (path: string, body: Record<string, unknown>, as: Tenant = tenant) => t.http().post(path).set(as.key).send(body).then((res) => ok(res, 201))
    companyId = (await post('/companies', { name: 'Acme' })).id
    contactId = (await post('/contacts', { first_name: 'Ada', last_name: 'Lovelace', company_id: companyId })).id
    await post('/custom-fields', { entity_type: 'deal', key: 'tier', name: 'Tier', field_type: 'text' })
    const pipeline = await post('/pipelines', { name: 'Sales' })
    const stage = await post('/pipeline-stages', { pipeline_id: pipeline.id, name: 'Won soon', position: 0 })
    dealIds = []
    for (let i = 0; i < 3; i++) {
      dealIds.push((await post('/deals', {
        name: `Deal ${i}`, amount: '10.50', currency: 'EUR', status: 'open', pipeline_id: pipeline.id, pipeline_stage_id: stage.id,
        company_id: companyId, contact_id: contactId, owned_by_user_id: tenant.user.id, custom_fields_by_name: { Tier: 'gold' }
      })).id)
    }
    activityIds = []
    for (let day = 2; day <= 8; day++) {
      activityIds.push((await post('/activities', { subject: `Call ${day}`, activity_type: 'call', start_date: `2026-03-0${day}`, contact_id: contactId, deal_id: dealIds[0] })).id)
    }
    // The other organization lists the same shapes.
    await post('/activities', { subject: 'Theirs', activity_type: 'call', start_date: '2026-03-03' }, other)
    otherCompanyId = (await post('/companies', { name: 'Theirs' }, other)).id
  })
  afterAll(async () => t?.close())

  it('answers a page asked again from the kept one, in one statement, until a row it reads is written', async () => {
    for (const [path, query] of [['/activities', WEEK], ['/deals', DEALS]] as const) {
      const first = await page(path, query)
      expect(first.body.data.length, path).toBeGreaterThan(0)
      expect(await page(path, query), path).toMatchObject(fromKept())
      // Another page of the same shape (other values) is its own.
      const second = await page(path, { ...query, $limit: 2 })
      expect(second.body.data).toHaveLength(2)
      expect(second.body.total).toBe(first.body.total)
    }
    if (!isEmbedded(t.db)) expect(recordPagesOf(t.db).size).toBeGreaterThanOrEqual(4)
  })

  it("reads the page again after a write of its own table: an update, a create, a soft delete, a hard delete", async () => {
    await page('/activities', WEEK)
    const steps: Step[] = [
      ['update', () => patch('/activities', activityIds[0], { subject: 'Renamed call' }), (body) => expect(body.data[0].subject).toBe('Renamed call')],
      ['create', () => t.http().post('/activities').set(tenant.key).send({ subject: 'New call', activity_type: 'call', start_date: '2026-03-04' }), (body) => expect(body.total).toBe(8)],
      ['soft delete', () => t.http().delete(`/activities/${activityIds[1]}`).set(tenant.key), (body) => expect(body.data.map((a: any) => a.id)).not.toContain(activityIds[1])],
      ['hard delete', () => t.db('activities').where({ id: activityIds[1] }).delete(), (body) => expect(body.total).toBe(7)]
    ]
    await expectReadAgainAfterEach('/activities', WEEK, steps)
  })

  it("reads the page again after a write of a relation's table, a user or a custom-field definition", async () => {
    const [definition] = await t.db('custom_fields').where({ organization_id: tenant.organization.id, entity_type: 'deal', key: 'tier' }).select('id')
    await page('/deals', DEALS)
    const steps: Step[] = [
      ['company', () => patch('/companies', companyId, { name: 'Acme Renamed' }), (body) => expect(body.data[0].company.name).toBe('Acme Renamed')],
      ['contact', () => patch('/contacts', contactId, { first_name: 'Augusta' }), (body) => expect(body.data[0].contact.first_name).toBe('Augusta')],
      ['user', () => t.db('users').where({ id: tenant.user.id }).update({ first_name: 'Renamed owner' }), (body) => expect(body.data[0].owner.first_name).toBe('Renamed owner')],
      ['custom-field definition', () => patch('/custom-fields', definition.id, { name: 'Level' }), (body) => expect(body.data[0].custom_fields_by_name).toEqual({ Level: 'gold' })],
      ['deal in a transaction that commits', () => t.db.transaction((trx) => trx('deals').where({ id: dealIds[0] }).update({ name: 'In a transaction' })), (body) => expect(body.data[0].name).toBe('In a transaction')]
    ]
    await expectReadAgainAfterEach('/deals', DEALS, steps)
  })

  it('keeps the page through a write that is rolled back, and through writes of another organization', async () => {
    await page('/activities', WEEK)
    await t.db.transaction(async (trx) => {
      await trx('activities').where({ id: activityIds[2] }).update({ subject: 'Never' })
      await trx.rollback()
    }).catch(() => undefined)
    ok(await patch('/companies', otherCompanyId, { name: 'Theirs renamed' }, other))
    ok(await t.http().post('/activities').set(other.key).send({ subject: 'Their second', activity_type: 'call', start_date: '2026-03-05' }), 201)
    const after = await page('/activities', WEEK)
    expect(after).toMatchObject(fromKept())
    expect(after.body.data.map((a: any) => a.subject)).not.toContain('Never')
  })

  it("never answers one organization's request with another's page of the same shape", async () => {
    const ours = await page('/activities', WEEK)
    const theirs = await page('/activities', WEEK, other)
    expect(theirs.body.data.every((a: any) => a.organization_id === other.organization.id)).toBe(true)
    expect(theirs.body.data.map((a: any) => a.id)).not.toEqual(ours.body.data.map((a: any) => a.id))
    // Cross-organization attempts answer as before: 403 for another organization, 404 by id, 400 for a foreign reference.
    expect((await t.http().get('/activities').set(tenant.key).send({ query: { organization_id: other.organization.id, ...WEEK } })).status).toBe(403)
    expect((await t.http().get(`/activities/${activityIds[0]}`).set(other.key)).status).toBe(404)
    expect((await t.http().post('/activities').set(other.key).send({ subject: 'x', activity_type: 'call', start_date: '2026-03-05', deal_id: dealIds[0] })).status).toBe(400)
  })

  it('keeps nothing with no budget, and forgets a page whose mark moved', () => {
    const none = new RecordPages(0)
    none.set('1 [1]', '5:0', 1, [Buffer.from('{}')])
    expect(none.enabled).toBe(false)
    expect(none.get('1 [1]', '5:0')).toBeUndefined()
    const pages = new RecordPages(1)
    pages.set('1 [1]', '5:0', 1, [Buffer.from('{"id":1}')])
    expect(pages.get('1 [1]', '5:0')).toMatchObject({ total: 1 })
    expect(pages.get('1 [1]', '6:0')).toBeUndefined()
    expect(pages.get('1 [2]', '5:0')).toBeUndefined()
  })

  it("pauses a list's lookups where its mark moves faster than its pages are asked again, and tries again later", () => {
    const pages = new RecordPages(1)
    const now = 1_000_000
    // Hits often enough: looked up all along.
    for (let i = 0; i < YIELD_WINDOW * 3; i++) pages.looked('busy 1', i % 2 === 0, now)
    expect(pages.worthLooking('busy 1', now)).toBe(true)
    // Too few hits over a window: paused for PAUSE_MS, that list and organization only.
    const hits = Math.ceil(YIELD_WINDOW * MIN_HIT_RATE) - 1
    for (let i = 0; i < YIELD_WINDOW; i++) pages.looked('written 1', i < hits, now)
    expect(pages.worthLooking('written 1', now)).toBe(false)
    expect(pages.worthLooking('written 1', now + PAUSE_MS - 1)).toBe(false)
    expect(pages.worthLooking('written 2', now)).toBe(true)
    expect(pages.worthLooking('busy 1', now)).toBe(true)
    expect(pages.worthLooking('written 1', now + PAUSE_MS)).toBe(true)
    // Pages not kept yet (a list's first requests) never pause it; pages kept under a mark that moved do.
    const warming = new RecordPages(1)
    for (let i = 0; i < YIELD_WINDOW * 3; i++) expect(warming.get(`1 [${i}]`, '1:0', 'cold 1')).toBeUndefined()
    expect(warming.worthLooking('cold 1')).toBe(true)
    for (let i = 0; i < YIELD_WINDOW; i++) warming.set(`1 [${i}]`, '1:0', 1, [Buffer.from('{}')])
    for (let i = 0; i < YIELD_WINDOW; i++) expect(warming.get(`1 [${i}]`, '2:0', 'cold 1')).toBeUndefined()
    expect(warming.worthLooking('cold 1')).toBe(false)
    // Nothing is looked up without a budget.
    expect(new RecordPages(0).worthLooking('busy 1', now)).toBe(false)
  })
})
