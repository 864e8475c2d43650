import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isEmbedded } from '../../src/db.js'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { attachRelations } from '../../src/services/joins.js'
import type { JoinSpec } from '../../src/services/joins.js'
import { CREATOR_AND_OWNER } from '../../src/services/companies/companies.js'
import { COMPANY_AND_OWNER } from '../../src/services/contacts/contacts.class.js'
import { LIST_JOINS as DEAL_JOINS } from '../../src/services/deals/deals.class.js'
import { LIST_JOINS as ACTIVITY_JOINS } from '../../src/services/activities/activities.class.js'
import { USER_JOIN } from '../../src/services/organizations-users/organizations-users.class.js'

/**
 * A joined list reads its relations in the page's own statement (a correlated subquery per
 * relation, building the related record as JSON). What a client gets must be what the batch
 * loader (attachRelations, still used for single reads, subclass lists and loaders of their own)
 * attaches to the same rows, field for field and type for type, including absent, deleted and
 * computed relations; and it must stay one statement and inside the caller's organization.
 */
describe('relations read in the list statement', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant
  let otherCompanyId: number
  let deletedCompanyId: number
  const PAGE = 6

  const list = (path: string, query: Record<string, unknown>, as: Tenant = tenant) => t.http().get(path).set(as.key).send({ query })
  const created = (res: { status: number; body: any }) => {
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }

  beforeAll(async () => {
    // Whole pages are not kept (record-pages.ts, tested in record-pages.test.ts): these count the statements below them.
    t = await startApp({ pageCacheMb: 0 })
    tenant = await createTenant(t, 'Inline')
    other = await createTenant(t, 'Elsewhere')
    const member = await addMember(t, tenant, 'member')
    const post = (path: string, body: Record<string, unknown>, as: Tenant = tenant) => t.http().post(path).set(as.key).send(body)
    const pipeline = created(await post('/pipelines', { name: 'Sales' }))
    const stage = created(await post('/pipeline-stages', { pipeline_id: pipeline.id, name: "Négociation l'été", position: 0 }))
    otherCompanyId = created(await post('/companies', { name: 'Theirs' }, other)).id
    for (let i = 0; i < PAGE; i++) {
      // Every shape of relation: present, absent (null id), and pointing at a record deleted later.
      const company = created(await post('/companies', {
        name: `Company "${i}" \\ ünïcode ✓`, website: i % 2 ? `https://c${i}.example` : undefined, owned_by_user_id: i % 2 ? member.user.id : undefined
      }))
      const contact = i === 1 ? null : created(await post('/contacts', {
        first_name: `Person ${i}`, last_name: i === 2 ? undefined : 'Inline', email: `p${i}@example.test`, phone: '+33 6 12 34 56 78',
        company_id: company.id, owned_by_user_id: member.user.id
      }))
      const deal = created(await post('/deals', {
        name: `Deal ${i}`, amount: '1234.50', currency: 'EUR', status: 'open', pipeline_id: pipeline.id, pipeline_stage_id: stage.id,
        company_id: company.id, ...(contact ? { contact_id: contact.id } : {}), ...(i % 3 ? { owned_by_user_id: member.user.id } : {})
      }))
      created(await post('/activities', {
        subject: `Call ${i}`, start_date: '2026-03-02', activity_type: 'call', deal_id: deal.id, company_id: company.id,
        ...(contact ? { contact_id: contact.id } : {}), ...(i % 2 ? { assigned_to_user_id: member.user.id } : {})
      }))
      if (i === 3) deletedCompanyId = company.id
    }
    expect((await t.http().delete(`/companies/${deletedCompanyId}`).set(tenant.key)).status).toBe(200)
  })
  afterAll(async () => t?.close())

  const cases: [string, string | undefined, JoinSpec[], Record<string, unknown>][] = [
    ['/companies', 'fastJoinForCompanyList', CREATOR_AND_OWNER, {}],
    ['/contacts', 'fastJoinForContactList', COMPANY_AND_OWNER, {}],
    ['/deals', 'fastJoinForDealsList', DEAL_JOINS, {}],
    ['/activities', 'fastJoinForActivityList', ACTIVITY_JOINS, { start_date: { $gte: '2026-03-01', $lte: '2026-03-31' } }],
    ['/organizations-users', undefined, USER_JOIN as JoinSpec[], {}]
  ]

  for (const [path, flag, specs, filters] of cases) {
    it(`answers ${path}${flag ? ` with ${flag}` : ''} with what the batch loader attaches, in the list's statement (a wire page: in the statement reading its records by key)`, async () => {
      const query = { organization_id: tenant.organization.id, ...filters, ...(flag ? { [flag]: true } : {}) }
      const service = t.app.service(path.slice(1) as any) as any
      await list(path, query)
      const { result: res, count, sql } = await countQueries(t.db, () => list(path, query))
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.length).toBeGreaterThan(0)
      // A wire page selects its keys first (a filtered one then their versions by key); its records
      // and their relations come in the statement that reads them by key. Otherwise the page's own
      // statement reads the relations.
      const wire = !isEmbedded(t.db) && Boolean(service.options.wire)
      expect(count, sql.join('\n')).toBe(wire ? (Object.keys(filters).length > 0 ? 3 : 2) : 1)
      expect(sql[count - 1]).toContain('row_to_json(crm_relation)')
      expect(sql.filter((text) => text.includes('row_to_json(crm_relation)'))).toHaveLength(1)

      // The same rows as stored, with the relations attached by the batch loader.
      const stored: Record<string, any>[] = await service.find({ query: { organization_id: tenant.organization.id, ...filters, $limit: 100 }, paginate: false, system: true })
      const expected = await attachRelations(t.db, stored, specs)
      const byId = new Map(expected.map((row) => [row.id, row]))
      for (const record of res.body.data) {
        for (const spec of specs) expect(record[spec.as], `${path} ${record.id} ${spec.as}`).toEqual(JSON.parse(JSON.stringify(byId.get(record.id)![spec.as])))
      }
      // Every shape showed up: a record present and one absent, where the data has both.
      const values = res.body.data.flatMap((record: any) => specs.map((spec) => record[spec.as]))
      expect(values.some((value: unknown) => value !== null)).toBe(true)
    })
  }

  it('joins an absent or deleted related record as null, and a computed one as the batch does', async () => {
    const deals = (await list('/deals', { fastJoinForDealsList: true, $sort: { id: 1 } })).body.data
    expect(deals.map((deal: any) => deal.contact === null)).toEqual([false, true, false, false, false, false])
    expect(deals[3].company).toBeNull()
    expect(deals[0].company).toEqual({
      id: deals[0].company_id, name: 'Company "0" \\ ünïcode ✓', organization_id: tenant.organization.id, created_by_user_id: tenant.user.id, owned_by_user_id: tenant.user.id
    })
    expect(deals[2].contact).toMatchObject({ first_name: 'Person 2', last_name: null, phone: '+33 6 12 34 56 78' })
    expect(deals[0].pipelineStage.name).toBe("Négociation l'été")
    const activities = (await list('/activities', { fastJoinForActivityList: true, start_date: '2026-03-02', $sort: { id: 1 } })).body.data
    expect(activities[0].contact).toEqual({ id: deals[0].contact_id, full_name: 'Person 0 Inline' })
    expect(activities[1].contact).toBeNull()
    expect(activities[1].assigned_to_user).toMatchObject({ full_name: 'Grace Hopper' })
  })

  it('keeps the page, its total, later pages and $select as without joins', async () => {
    const plain = await list('/deals', { $limit: 4, $skip: 2 })
    const joined = await list('/deals', { fastJoinForDealsList: true, $limit: 4, $skip: 2 })
    expect(joined.body.total).toBe(PAGE)
    expect(joined.body.data.map((deal: any) => deal.id)).toEqual(plain.body.data.map((deal: any) => deal.id))
    const past = await list('/deals', { fastJoinForDealsList: true, $skip: 50 })
    expect(past.body).toMatchObject({ total: PAGE, skip: 50, data: [] })
    const selected = await list('/deals', { $select: ['name', 'company'], $limit: 1, $sort: { id: 1 } })
    expect(Object.keys(selected.body.data[0]).sort()).toEqual(['company', 'id', 'name'])
    expect(selected.body.data[0].company.name).toBe('Company "0" \\ ünïcode ✓')
  })

  it('joins a sync client\'s keyset pages, deleted records included, and answers $limit 0 with the total alone', async () => {
    const start = { updated_at: '1970-01-01T00:00:00.000Z', id: 0 }
    const first = await list('/deals', { fastJoinForDealsList: true, $withDeleted: true, $after: start, $limit: 4 })
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    const second = await list('/deals', { fastJoinForDealsList: true, $withDeleted: true, $limit: 4, $after: first.body.next })
    expect(second.status, JSON.stringify(second.body)).toBe(200)
    const synced = [...first.body.data, ...second.body.data]
    expect(synced).toHaveLength(PAGE)
    expect(synced.every((deal: any) => 'company' in deal && 'contact' in deal && 'owner' in deal && deal.pipelineStage?.name === "Négociation l'été")).toBe(true)
    expect(synced.find((deal: any) => deal.company_id === deletedCompanyId).company).toBeNull()
    const counted = await list('/deals', { fastJoinForDealsList: true, $limit: 0 })
    expect(counted.body).toMatchObject({ total: PAGE, data: [] })
  })

  it('refuses a join flag that is not a boolean, and a filter on a joined object, with a 400 in the error shape', async () => {
    for (const query of [{ fastJoinForDealsList: 'banana' }, { fastJoinForDealsList: { $gt: 1 } }, { company: 'Theirs' }, { 'company.name': 'Theirs' }]) {
      const res = await list('/deals', query)
      expect(res.status, JSON.stringify(query)).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
    }
  })

  it('never crosses organizations: their list is theirs, their ids are not found, naming their organization is 403, their company in a body is 400', async () => {
    const theirs = await list('/deals', { fastJoinForDealsList: true }, other)
    expect(theirs.status).toBe(200)
    expect(theirs.body).toMatchObject({ total: 0, data: [] })
    const ours = (await list('/deals', { fastJoinForDealsList: true })).body.data
    expect((await t.http().get(`/deals/${ours[0].id}`).set(other.key)).status).toBe(404)
    expect((await list('/deals', { organization_id: tenant.organization.id, fastJoinForDealsList: true }, other)).status).toBe(403)
    const foreign = await t.http().post('/deals').set(tenant.key).send({ name: 'Cross', company_id: otherCompanyId })
    expect(foreign.status).toBe(400)
    // The users a company joins (a global table) are the ones its own rows name.
    const companies = (await list('/companies', { fastJoinForCompanyList: true })).body.data
    expect(companies.every((company: any) => company.creator?.id === tenant.user.id)).toBe(true)
  })
})
