import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline, createProduct } from './deal-fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('deals', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let board: { pipeline: any; stages: any[] }

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    board = await createPipeline(t, acme)
  })
  afterAll(async () => {
    await t.close()
  })

  const create = (body: Record<string, unknown>, tenant = acme) =>
    t.http().post('/deals').set(tenant.key).send({
      name: 'Big deal', amount: 1500, currency: 'EUR', status: 'open',
      pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id, ...body
    })
  const patch = (id: number, body: Record<string, unknown>) => t.http().patch(`/deals/${id}`).set(acme.key).send(body)
  const read = async (id: number) => (await t.http().get(`/deals/${id}`).set(acme.key)).body

  describe('create', () => {
    it('when an open deal is created with an API key, then 201 with the spec fields, amount as a decimal string, no outcome dates and its joined records, as a read answers it', async () => {
      const res = await create({ expected_close_date: '2026-12-31' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      const { pipeline, pipelineStage, company, contact, owner, dealProducts, ...fields } = res.body
      expect(fields).toEqual({
        id: expect.any(Number),
        organization_id: acme.organization.id,
        name: 'Big deal',
        amount: '1500.00',
        currency: 'EUR',
        status: 'open',
        pipeline_id: board.pipeline.id,
        pipeline_stage_id: board.stages[0].id,
        contact_id: null,
        company_id: null,
        created_by_user_id: acme.user.id,
        owned_by_user_id: acme.user.id,
        expected_close_date: '2026-12-31',
        won_date: null,
        lost_date: null,
        custom_fields_by_name: {},
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        external_id: null, deleted_at: null
      })
      expect(await read(res.body.id)).toEqual(res.body)
      expect([pipeline, pipelineStage, company, contact, owner, dealProducts]).toEqual([
        { id: board.pipeline.id, name: 'Sales' }, { id: board.stages[0].id, name: 'Lead', pipeline_id: board.pipeline.id },
        null, null, { id: acme.user.id, first_name: 'Ada', last_name: 'Lovelace', email: acme.user.email }, []
      ])
    })

    it.each([
      ['2026-12-31', '2026-12-31'],
      ['2026-12-31T23:30:00Z', '2026-12-31'],
      ['2026-12-31T23:30:00.000-05:00', '2026-12-31'],
      ['2027-01-01T00:30:00+02:00', '2027-01-01']
    ])('when expected_close_date is %s, then it is stored and returned as %s', async (input, output) => {
      const res = await create({ expected_close_date: input })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.expected_close_date).toBe(output)
      expect((await read(res.body.id)).expected_close_date).toBe(output)
    })

    it('when a deal is created won, then won_date is its creation time; created lost, lost_date is', async () => {
      const won = (await create({ status: 'won' })).body
      expect(won.won_date).toBe(won.created_at)
      expect(won.lost_date).toBeNull()
      const lost = (await create({ status: 'lost' })).body
      expect(lost.lost_date).toBe(lost.created_at)
      expect(lost.won_date).toBeNull()
    })

    it('when amounts have cents, then they are kept exactly', async () => {
      const res = await create({ amount: 19.99 })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.amount).toBe('19.99')
      const big = await create({ amount: 999999999999.99 })
      expect(big.body.amount).toBe('999999999999.99')
    })

    it('when the amount is a decimal string, then it is stored exactly; patched with one, it is read back exactly', async () => {
      const res = await create({ amount: '10.50' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.amount).toBe('10.50')
      expect((await patch(res.body.id, { amount: '999999999999.99' })).status).toBe(200)
      expect((await read(res.body.id)).amount).toBe('999999999999.99')
    })

    it('when a JSON number has more than 2 decimals that a float would round away, then 400 and nothing is stored', async () => {
      const before = await t.db('deals').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const body = `{"name":"Rounded","amount":19.999999999999999999,"currency":"EUR","status":"open","pipeline_id":${board.pipeline.id},"pipeline_stage_id":${board.stages[0].id}}`
      const res = await t.http().post('/deals').set(acme.key).set('Content-Type', 'application/json').send(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ amount: 'must have at most 2 decimal places' })
      const after = await t.db('deals').where({ organization_id: acme.organization.id }).count({ n: '*' })
      expect(after[0].n).toBe(before[0].n)
    })

    it.each([
      [{ amount: -1 }, { amount: 'must be at least 0' }],
      [{ amount: 10.001 }, { amount: 'must have at most 2 decimal places' }],
      [{ amount: '15.005' }, { amount: 'must be an amount like 10.50: at most 12 digits before the point and 2 after' }],
      [{ amount: '-1' }, { amount: 'must be an amount like 10.50: at most 12 digits before the point and 2 after' }],
      [{ amount: true }, { amount: 'must be a number or text' }],
      [{ currency: 'eur' }, { currency: 'must be a currency code in capitals like EUR' }],
      [{ currency: 'EURO' }, { currency: 'must be a currency code in capitals like EUR' }],
      [{ currency: 'ABC' }, { currency: 'must be an ISO 4217 currency code' }],
      [{ status: 'pending' }, { status: expect.any(String) }],
      [{ expected_close_date: '31/12/2026' }, { expected_close_date: expect.any(String) }],
      [{ expected_close_date: '2026-02-30' }, { expected_close_date: expect.any(String) }],
      [{ name: '' }, { name: expect.any(String) }],
      [{ won_date: '2026-01-01T00:00:00.000Z' }, { won_date: 'is not allowed' }],
      [{ created_by_user_id: 1 }, { created_by_user_id: 'is not allowed' }]
    ])('when the body has %j, then 400 with the field error', async (body, errors) => {
      const res = await create(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual(errors)
    })

    it.each(['name', 'amount', 'currency', 'status', 'pipeline_id', 'pipeline_stage_id'])(
      'when %s is missing, then 400 with errors.<field> is required',
      async (field) => {
        const body: Record<string, unknown> = {
          name: 'Big deal', amount: 1500, currency: 'EUR', status: 'open',
          pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id
        }
        delete body[field]
        const res = await t.http().post('/deals').set(acme.key).send(body)
        expect(res.status).toBe(400)
        expect(res.body.errors).toEqual({ [field]: 'is required' })
      }
    )

    it('when the stage belongs to another pipeline, then 400 with errors.pipeline_stage_id and nothing is written', async () => {
      const other = await createPipeline(t, acme, ['Elsewhere'])
      const before = await t.db('deals').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const res = await create({ pipeline_stage_id: other.stages[0].id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the deal's pipeline" })
      const after = await t.db('deals').where({ organization_id: acme.organization.id }).count({ n: '*' })
      expect(after[0].n).toBe(before[0].n)
    })

    it("when the pipeline is of type 'conversation', then 400 with errors.pipeline_id", async () => {
      const inbox = await createPipeline(t, acme, ['New'], { type: 'conversation' })
      const res = await create({ pipeline_id: inbox.pipeline.id, pipeline_stage_id: inbox.stages[0].id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_id: 'must be a deal pipeline of this organization' })
    })

    it('when the stage is deleted, then 400 with errors.pipeline_stage_id', async () => {
      const withSpare = await createPipeline(t, acme, ['Kept', 'Dropped'])
      await t.http().delete(`/pipeline-stages/${withSpare.stages[1].id}`).set(acme.key).expect(200)
      const res = await create({ pipeline_id: withSpare.pipeline.id, pipeline_stage_id: withSpare.stages[1].id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the deal's pipeline" })
    })

    it('when contact, company and owner are of the organization, then they are kept and joined on read', async () => {
      const member = await addMember(t, acme, 'member')
      const company = (await t.http().post('/companies').set(acme.key).send({ name: 'Initech' })).body
      const contact = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Peter', last_name: 'Gibbons', email: 'peter@initech.example', company_id: company.id })).body
      const res = await create({ contact_id: contact.id, company_id: company.id, owned_by_user_id: member.user.id })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ contact_id: contact.id, company_id: company.id, owned_by_user_id: member.user.id, created_by_user_id: acme.user.id })
      const deal = await read(res.body.id)
      expect(deal.company).toEqual({ id: company.id, name: 'Initech', organization_id: acme.organization.id, created_by_user_id: acme.user.id, owned_by_user_id: acme.user.id })
      expect(deal.contact).toEqual({
        id: contact.id, first_name: 'Peter', last_name: 'Gibbons', email: 'peter@initech.example',
        phone: null, phone_country_code: null, company_id: company.id, avatar_url: null
      })
      expect(deal.owner).toEqual({ id: member.user.id, first_name: 'Grace', last_name: 'Hopper', email: member.user.email })
    })
  })

  describe('status moves', () => {
    it('when an open deal is won, then won_date is the update time', async () => {
      const deal = (await create({})).body
      const res = await patch(deal.id, { status: 'won' })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.status).toBe('won')
      expect(res.body.won_date).toMatch(ISO_MS)
      expect(res.body.won_date).toBe(res.body.updated_at)
      expect(res.body.lost_date).toBeNull()
      expect(await read(deal.id)).toMatchObject({ status: 'won', won_date: res.body.won_date, lost_date: null })
    })

    it('when an open deal is lost, then lost_date is the update time', async () => {
      const deal = (await create({})).body
      const res = await patch(deal.id, { status: 'lost' })
      expect(res.body).toMatchObject({ status: 'lost', won_date: null, lost_date: res.body.updated_at })
      expect(await read(deal.id)).toMatchObject({ status: 'lost', won_date: null, lost_date: res.body.updated_at })
    })

    it('when a won or lost deal is reopened, then both dates are cleared', async () => {
      for (const outcome of ['won', 'lost']) {
        const deal = (await create({ status: outcome })).body
        const res = await patch(deal.id, { status: 'open' })
        expect(res.body).toMatchObject({ status: 'open', won_date: null, lost_date: null })
        expect(await read(deal.id)).toMatchObject({ status: 'open', won_date: null, lost_date: null })
      }
    })

    it('when a won deal is lost, or a lost deal won, then the dates swap', async () => {
      const deal = (await create({ status: 'won' })).body
      const lost = await patch(deal.id, { status: 'lost' })
      expect(lost.body).toMatchObject({ status: 'lost', won_date: null, lost_date: lost.body.updated_at })
      const won = await patch(deal.id, { status: 'won' })
      expect(won.body).toMatchObject({ status: 'won', won_date: won.body.updated_at, lost_date: null })
      expect(await read(deal.id)).toMatchObject({ status: 'won', won_date: won.body.updated_at, lost_date: null })
    })

    it('when a patch keeps the status or changes other fields, then the outcome date is kept', async () => {
      const deal = (await create({ status: 'won' })).body
      const same = await patch(deal.id, { status: 'won', amount: 2000 })
      expect(same.body).toMatchObject({ won_date: deal.won_date, amount: '2000.00' })
      const renamed = await patch(deal.id, { name: 'Renamed' })
      expect(renamed.body.won_date).toBe(deal.won_date)
      expect(renamed.body.updated_at > deal.updated_at).toBe(true)
    })

    it('when a deal moves through the stages and is won, then each move is read back', async () => {
      const deal = (await create({})).body
      for (const stage of board.stages.slice(1)) {
        const res = await patch(deal.id, { pipeline_stage_id: stage.id })
        expect(res.status).toBe(200)
        expect((await read(deal.id)).pipelineStage).toEqual({ id: stage.id, name: stage.name, pipeline_id: board.pipeline.id })
      }
      const won = await patch(deal.id, { status: 'won' })
      expect(won.body).toMatchObject({ status: 'won', pipeline_stage_id: board.stages[2].id })
    })
  })

  describe('patch', () => {
    it('when the stage of another pipeline is patched in, or the pipeline alone changes, then 400 and the deal is unchanged', async () => {
      const deal = (await create({})).body
      const other = await createPipeline(t, acme, ['A', 'B'])
      const wrongStage = await patch(deal.id, { pipeline_stage_id: other.stages[0].id })
      expect(wrongStage.status).toBe(400)
      expect(wrongStage.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the deal's pipeline" })
      const pipelineOnly = await patch(deal.id, { pipeline_id: other.pipeline.id })
      expect(pipelineOnly.status).toBe(400)
      expect(pipelineOnly.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the deal's pipeline" })
      expect(await read(deal.id)).toMatchObject({ pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id })
      const both = await patch(deal.id, { pipeline_id: other.pipeline.id, pipeline_stage_id: other.stages[1].id })
      expect(both.status).toBe(200)
      expect(await read(deal.id)).toMatchObject({ pipeline_id: other.pipeline.id, pipeline_stage_id: other.stages[1].id })
    })

    it('when any deal field is patched, then the same validation applies', async () => {
      const deal = (await create({})).body
      expect((await patch(deal.id, { amount: -5 })).body.errors).toEqual({ amount: 'must be at least 0' })
      expect((await patch(deal.id, { currency: 'ZZZ' })).body.errors).toEqual({ currency: 'must be an ISO 4217 currency code' })
      expect((await patch(deal.id, { organization_id: globex.organization.id })).body.errors).toEqual({ organization_id: 'is not allowed' })
      const ok = await patch(deal.id, { name: 'Renewal', amount: 120.5, currency: 'USD', expected_close_date: '2027-03-01T10:00:00Z', owned_by_user_id: null })
      expect(ok.status, JSON.stringify(ok.body)).toBe(200)
      expect(await read(deal.id)).toMatchObject({ name: 'Renewal', amount: '120.50', currency: 'USD', expected_close_date: '2027-03-01', owned_by_user_id: null, owner: null })
    })
  })

  describe('custom fields', () => {
    it('when custom_fields_by_name are sent, then they are validated against the deal fields and read back by name', async () => {
      const field = await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'deal', key: 'source', name: 'Source', field_type: 'select', options: ['Web', 'Referral'] })
      expect(field.status, JSON.stringify(field.body)).toBe(201)
      const res = await create({ custom_fields_by_name: { Source: 'Referral' } })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.custom_fields_by_name).toEqual({ Source: 'Referral' })
      expect(res.body).not.toHaveProperty('custom_fields')
      expect((await read(res.body.id)).custom_fields_by_name).toEqual({ Source: 'Referral' })
      const bad = await create({ custom_fields_by_name: { Source: 'Cold call', Unknown: 1 } })
      expect(bad.status).toBe(400)
      expect(Object.keys(bad.body.errors).sort()).toEqual(['custom_fields_by_name.Source', 'custom_fields_by_name.Unknown'])
      const changed = await patch(res.body.id, { custom_fields_by_name: { Source: 'Web' } })
      expect(changed.body.custom_fields_by_name).toEqual({ Source: 'Web' })
    })
  })

  describe('find', () => {
    let org: Tenant
    let pipe: { pipeline: any; stages: any[] }
    let other: { pipeline: any; stages: any[] }
    let deals: any[]
    let company: any
    let contact: any
    let member: any
    beforeAll(async () => {
      org = await createTenant(t, 'Finder')
      pipe = await createPipeline(t, org, ['One', 'Two'])
      other = await createPipeline(t, org, ['Elsewhere'])
      member = await addMember(t, org, 'member')
      company = (await t.http().post('/companies').set(org.key).send({ name: 'Hooli' })).body
      contact = (await t.http().post('/contacts').set(org.key).send({ first_name: 'Gavin', company_id: company.id })).body
      deals = [
        await createDeal(t, org, pipe, { name: 'D1', amount: 100, expected_close_date: '2026-01-15' }),
        await createDeal(t, org, pipe, { name: 'D2', amount: 500, status: 'won', pipeline_stage_id: pipe.stages[1].id, company_id: company.id, expected_close_date: '2026-02-15' }),
        await createDeal(t, org, pipe, { name: 'D3', amount: 900, status: 'lost', contact_id: contact.id, owned_by_user_id: member.user.id }),
        await createDeal(t, org, other, { name: 'D4', amount: 50, expected_close_date: '2026-03-15' })
      ]
    })
    const names = (res: any) => res.body.data.map((deal: any) => deal.name)
    const list = (query: Record<string, unknown>) => t.http().get('/deals').set(org.key).send({ query })

    it.each([
      [{ status: 'won' }, ['D2']],
      [{ status: 'open' }, ['D1', 'D4']],
      [{ pipeline_id: 'other' }, ['D4']],
      [{ pipeline_stage_id: 'two' }, ['D2']],
      [{ company_id: 'company' }, ['D2']],
      [{ contact_id: 'contact' }, ['D3']],
      [{ owned_by_user_id: 'member' }, ['D3']],
      [{ amount: { $gte: 100, $lte: 500 } }, ['D1', 'D2']],
      [{ expected_close_date: { $gte: '2026-02-01', $lte: '2026-03-31' } }, ['D2', 'D4']],
      [{ $sort: { amount: -1 } }, ['D3', 'D2', 'D1', 'D4']]
    ])('when filtering with %j, then only the matching deals come back', async (query, expected) => {
      const ids: Record<string, number> = {
        other: other.pipeline.id, two: pipe.stages[1].id, company: company.id, contact: contact.id, member: member.user.id
      }
      const resolved = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, typeof v === 'string' && ids[v] ? ids[v] : v]))
      const res = await list(resolved)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(names(res)).toEqual(expected)
      expect(res.body.total).toBe(expected.length)
    })

    it('when filters come in the query string, then they are coerced and applied', async () => {
      const res = await t.http().get('/deals').set(org.key).query({ status: 'won', 'amount[$gte]': '100', $limit: '5' })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 1, limit: 5, skip: 0 })
      expect(names(res)).toEqual(['D2'])
    })

    it('when no $limit is given, then the page has 10; an unknown filter is 400', async () => {
      const res = await list({})
      expect(res.body).toMatchObject({ total: 4, limit: 10, skip: 0 })
      const paged = await list({ $limit: 2, $skip: 1, $sort: { amount: 1 } })
      expect(paged.body).toMatchObject({ total: 4, limit: 2, skip: 1 })
      expect(names(paged)).toEqual(['D1', 'D2'])
      const bad = await list({ colour: 'red' })
      expect(bad.status).toBe(400)
    })

    it('when fastJoinForDealsList is set, then company, contact, pipelineStage and owner carry exactly the spec fields', async () => {
      const res = await list({ fastJoinForDealsList: true, $sort: { id: 1 } })
      expect(res.status).toBe(200)
      const [d1, d2, d3] = res.body.data
      expect(d1).toMatchObject({ company: null, contact: null, pipelineStage: { id: pipe.stages[0].id, name: 'One', pipeline_id: pipe.pipeline.id } })
      expect(d2.company).toEqual({ id: company.id, name: 'Hooli', organization_id: org.organization.id, created_by_user_id: org.user.id, owned_by_user_id: org.user.id })
      expect(d3.contact).toEqual({
        id: contact.id, first_name: 'Gavin', last_name: null, email: null, phone: null, phone_country_code: null, company_id: company.id, avatar_url: null
      })
      expect(d3.owner).toEqual({ id: member.user.id, first_name: 'Grace', last_name: 'Hopper', email: member.user.email })
      expect(d1.owner).toEqual({ id: org.user.id, first_name: 'Ada', last_name: 'Lovelace', email: org.user.email })
      expect(d1).not.toHaveProperty('pipeline')
      expect(d1).not.toHaveProperty('dealProducts')
      const plain = await list({})
      expect(plain.body.data[0]).not.toHaveProperty('company')
    })

    it('when the joined list is read, then every deal carries its company, contact, owner and stage', async () => {
      const many = await createTenant(t, 'Many')
      const b = await createPipeline(t, many, ['S'])
      const people = await addMember(t, many, 'member')
      for (let i = 0; i < 12; i++) {
        const co = (await t.http().post('/companies').set(many.key).send({ name: `Co ${i}` })).body
        const ct = (await t.http().post('/contacts').set(many.key).send({ first_name: `P${i}`, company_id: co.id })).body
        await createDeal(t, many, b, { company_id: co.id, contact_id: ct.id, owned_by_user_id: i % 2 ? people.user.id : many.user.id })
      }
      const page = await t.http().get('/deals').set(many.key).send({ query: { $limit: 12, fastJoinForDealsList: true } })
      expect(page.body.data).toHaveLength(12)
      expect(page.body.data.every((deal: any) => deal.company && deal.contact && deal.owner && deal.pipelineStage)).toBe(true)
    })
  })

  describe('get', () => {
    it('when a deal has several deal products, then GET embeds them in the spec form', async () => {
      const product = await createProduct(t, acme, { name: 'Seat', sku: 'SEAT-1', price: 10, tax_percentage: 21 })
      const one = (await create({})).body
      const five = (await create({})).body
      await t.http().post('/deal-products').set(acme.key).send({ deal_id: one.id, product_id: product.id, quantity: 2, price: 100, discount_type: 'percentage', discount_percentage: 10, tax_percentage: 21, description: 'Annual' }).expect(201)
      for (let i = 1; i <= 5; i++) {
        await t.http().post('/deal-products').set(acme.key).send({ deal_id: five.id, product_id: product.id, quantity: i }).expect(201)
      }
      const small = await t.http().get(`/deals/${one.id}`).set(acme.key)
      const large = await t.http().get(`/deals/${five.id}`).set(acme.key)
      expect(large.body.dealProducts).toHaveLength(5)
      const flagged = await t.http().get(`/deals/${five.id}`).set(acme.key).query({ fastJoinForDealsList: true })
      expect(flagged.status).toBe(200)
      expect(flagged.body).toEqual(large.body)
      expect(small.body.dealProducts).toEqual([{
        id: expect.any(Number), quantity: '2.0000', price: '100.00', description: 'Annual', discount_type: 'percentage',
        discount_amount: null, discount_percentage: '10.00', tax_percentage: '21.00', total_amount_with_tax: '217.80',
        total_amount_without_tax: '180.00', product_id: product.id, name: 'Seat', sku: 'SEAT-1'
      }])
      expect(Object.keys(small.body.dealProducts[0])).toEqual([
        'id', 'quantity', 'price', 'description', 'discount_type', 'discount_amount', 'discount_percentage', 'tax_percentage',
        'total_amount_with_tax', 'total_amount_without_tax', 'product_id', 'name', 'sku'
      ])
    })
  })

  describe('delete', () => {
    it('when a deal is deleted, then it comes back with deleted_at equal to updated_at and is gone afterwards', async () => {
      const deal = (await create({})).body
      const res = await t.http().delete(`/deals/${deal.id}`).set(acme.key)
      expect(res.status).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`/deals/${deal.id}`).set(acme.key)).status).toBe(404)
      expect((await patch(deal.id, { name: 'Zombie' })).status).toBe(404)
      const listed = await t.http().get('/deals').set(acme.key).send({ query: { $limit: 100 } })
      expect(listed.body.data.map((d: any) => d.id)).not.toContain(deal.id)
    })
  })

  describe('cross-organization attempts', () => {
    let foreign: any
    let foreignBoard: { pipeline: any; stages: any[] }
    beforeAll(async () => {
      foreignBoard = await createPipeline(t, globex)
      foreign = await createDeal(t, globex, foreignBoard)
    })

    it('when another organization reads, patches or deletes a deal by id, then 404 and the deal is unchanged', async () => {
      const res = await t.http().get(`/deals/${foreign.id}`).set(acme.key)
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ name: 'NotFound', message: `No record found for id '${foreign.id}'`, code: 404, className: 'not-found' })
      expect((await patch(foreign.id, { status: 'won' })).status).toBe(404)
      expect((await t.http().delete(`/deals/${foreign.id}`).set(acme.key)).status).toBe(404)
      const own = await t.http().get(`/deals/${foreign.id}`).set(globex.key)
      expect(own.body).toMatchObject({ status: 'open', deleted_at: null, won_date: null })
    })

    it('when a key lists or creates with another organization_id, then 403', async () => {
      const list = await t.http().get('/deals').set(acme.key).send({ query: { organization_id: globex.organization.id } })
      expect(list.status).toBe(403)
      expect(list.body).toMatchObject({ name: 'Forbidden', code: 403, className: 'forbidden' })
      const created = await create({ organization_id: globex.organization.id, pipeline_id: foreignBoard.pipeline.id, pipeline_stage_id: foreignBoard.stages[0].id })
      expect(created.status).toBe(403)
      const jwt = await t.http().get('/deals').set(acme.bearer).query({ organization_id: globex.organization.id })
      expect(jwt.status).toBe(403)
    })

    it('when pipeline, stage, contact, company or owner belong to another organization, then 400 naming each field', async () => {
      const company = (await t.http().post('/companies').set(globex.key).send({ name: 'Globex Corp' })).body
      const contact = (await t.http().post('/contacts').set(globex.key).send({ first_name: 'Hank' })).body
      const res = await create({ pipeline_id: foreignBoard.pipeline.id, contact_id: contact.id, company_id: company.id, owned_by_user_id: globex.user.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({
        pipeline_id: 'must be a deal pipeline of this organization',
        contact_id: 'must be a contact of this organization',
        company_id: 'must be a company of this organization',
        owned_by_user_id: 'must be a member of this organization'
      })
      const stage = await create({ pipeline_stage_id: foreignBoard.stages[0].id })
      expect(stage.status).toBe(400)
      expect(stage.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the deal's pipeline" })
      const mine = (await create({})).body
      const patched = await patch(mine.id, { company_id: company.id })
      expect(patched.status).toBe(400)
      expect(patched.body.errors).toEqual({ company_id: 'must be a company of this organization' })
      expect((await read(mine.id)).company_id).toBeNull()
    })
  })
})
