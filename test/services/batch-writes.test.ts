import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline, createProduct } from './deal-fixtures.js'

/** Batch create, upsert, batch-update and batch-delete, through HTTP, on the shared mechanism. */
describe('batch writes', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant
  let otherCompany: { id: number }

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
    otherCompany = (await t.http().post('/companies').set(other.key).send({ name: 'Elsewhere' })).body
    const budget = await t.http().post('/custom-fields').set(acme.key)
      .send({ entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
    expect(budget.status, JSON.stringify(budget.body)).toBe(201)
  })
  afterAll(async () => { await t.close() })

  const post = (tenant: Tenant, path: string, body: unknown) => t.http().post(path).set(tenant.key).send(body as object)
  const method = (tenant: Tenant, verb: 'post' | 'patch', path: string, name: string, body: unknown) =>
    t.http()[verb](path).set(tenant.key).set('X-Service-Method', name).send(body as object)
  const liveContacts = (tenant: Tenant, where: Record<string, unknown> = {}) =>
    t.db('contacts').where({ organization_id: tenant.organization.id, ...where }).whereNull('deleted_at')
  /** The events a service emits while fn runs. */
  async function eventsOf(path: string, names: string[], fn: () => Promise<unknown>) {
    const heard: { event: string; id: number }[] = []
    const service = t.app.service(path as any) as any
    const listeners = names.map((event) => [event, (record: any) => heard.push({ event, id: record.id })] as const)
    for (const [event, listener] of listeners) service.on(event, listener)
    try {
      await fn()
    } finally {
      for (const [event, listener] of listeners) service.removeListener(event, listener)
    }
    return heard
  }

  describe('batch create: POST /<resource> with an array', () => {
    it('when 3 valid contacts are sent, then 201 with the 3 records in input order, stored, each with its created event', async () => {
      let res: any
      const heard = await eventsOf('contacts', ['created'], async () => {
        res = await post(acme, '/contacts', [
          { first_name: 'Batch A', email: 'a@batch.test', custom_fields_by_name: { Budget: 10 } },
          { first_name: 'Batch B', last_name: 'Bee' },
          { first_name: 'Batch C', phone: '020 7946 0958', phone_country_code: '+44' }
        ])
      })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.map((c: any) => c.first_name)).toEqual(['Batch A', 'Batch B', 'Batch C'])
      expect(res.body[0]).toMatchObject({ organization_id: acme.organization.id, email: 'a@batch.test', custom_fields_by_name: { Budget: 10 }, created_by_user_id: acme.user.id })
      expect(res.body[0]).not.toHaveProperty('custom_fields')
      for (const created of res.body) {
        const read = await t.http().get(`/contacts/${created.id}`).set(acme.key)
        expect(read.body).toEqual(created)
      }
      expect(heard.map((e) => e.id).sort()).toEqual(res.body.map((c: any) => c.id).sort())
      expect(heard.every((e) => e.event === 'created')).toBe(true)
    })

    it('when records 1 and 2 of 3 are invalid, then 400 with errors keyed by index and nothing is written', async () => {
      const before = (await liveContacts(acme)).length
      const res = await post(acme, '/contacts', [
        { first_name: 'Fine', email: 'fine@batch.test' },
        { first_name: 'Bad mail', email: 'not-an-email' },
        { first_name: 'Bad budget', custom_fields_by_name: { Budget: 'lots' } }
      ])
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual(['1', '2'])
      expect(res.body.errors['1'].email).toBeTruthy()
      expect(res.body.errors['2']['custom_fields_by_name.Budget']).toBe('must be a number')
      expect((await liveContacts(acme)).length).toBe(before)
      expect(await liveContacts(acme, { email: 'fine@batch.test' })).toEqual([])
    })

    it("when a record references another organization's company, then 400 keyed by its index and nothing is written", async () => {
      const before = (await liveContacts(acme)).length
      const res = await post(acme, '/contacts', [{ first_name: 'Ok' }, { first_name: 'Sneaky', company_id: otherCompany.id }])
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ 1: { company_id: 'must be a company of this organization' } })
      expect((await liveContacts(acme)).length).toBe(before)
    })

    it("when the records name another organization, then 403; when they name two, then 400", async () => {
      const foreign = await post(acme, '/contacts', [{ first_name: 'X', organization_id: other.organization.id }])
      expect(foreign.status).toBe(403)
      const mixed = await t.http().post('/contacts').set(acme.bearer)
        .send([{ first_name: 'X', organization_id: acme.organization.id }, { first_name: 'Y', organization_id: other.organization.id }])
      expect(mixed.status).toBe(400)
      expect(mixed.body.errors.organization_id).toBeTruthy()
      expect(await t.db('contacts').whereIn('organization_id', [acme.organization.id, other.organization.id]).whereIn('first_name', ['X', 'Y'])).toEqual([])
    })

    it('when the array is empty or holds 101 records, then 400', async () => {
      expect((await post(acme, '/contacts', [])).status).toBe(400)
      const tooMany = await post(acme, '/contacts', Array.from({ length: 101 }, (_v, i) => ({ first_name: `N${i}` })))
      expect(tooMany.status).toBe(400)
      expect(tooMany.body.errors.body).toMatch(/1 to 100/)
    })

    it('when 100 contacts with a company and custom fields are created, then each is answered and stored with them, in input order', async () => {
      const company = (await post(acme, '/companies', { name: 'Counted' })).body
      const batch = Array.from({ length: 100 }, (_v, i) => ({ first_name: `Hundred ${i}`, company_id: company.id, owned_by_user_id: acme.user.id, custom_fields_by_name: { Budget: i } }))
      const hundred = await post(acme, '/contacts', batch)
      expect(hundred.status, JSON.stringify(hundred.body).slice(0, 300)).toBe(201)
      expect(hundred.body.map((c: any) => [c.first_name, c.company_id, c.custom_fields_by_name.Budget])).toEqual(batch.map((c, i) => [c.first_name, company.id, i]))
      expect((await liveContacts(acme, { company_id: company.id }).orderBy('id')).map((c: any) => c.id)).toEqual(hundred.body.map((c: any) => c.id))
    })

    it('when deal products are created in a batch, then each line is priced from its product, in input order', async () => {
      const board = await createPipeline(t, acme)
      const deal = await createDeal(t, acme, board)
      const widget = await createProduct(t, acme, { name: 'Widget', price: 100, sku: 'W-1' })
      const gadget = await createProduct(t, acme, { name: 'Gadget', price: '12.50', sku: 'G-1', tax_percentage: 21 })
      const res = await post(acme, '/deal-products', [
        { deal_id: deal.id, product_id: widget.id, quantity: 2 },
        { deal_id: deal.id, product_id: gadget.id, quantity: 1 }
      ])
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.map((line: any) => [line.name, line.total_amount_without_tax, line.total_amount_with_tax])).toEqual([
        ['Widget', '200.00', '200.00'],
        ['Gadget', '12.50', '15.13']
      ])
      const foreign = await createProduct(t, other, { name: 'Foreign' })
      const refused = await post(acme, '/deal-products', [{ deal_id: deal.id, product_id: widget.id, quantity: 1 }, { deal_id: deal.id, product_id: foreign.id, quantity: 1 }])
      expect(refused.status).toBe(400)
      expect(refused.body.errors['1'].product_id).toBeTruthy()
    })

    it('when batches of 10 and 100 deals on one stage and of activities of one custom type are created, then won deals get their won date and every activity its type', async () => {
      const board = await createPipeline(t, acme)
      const demo = await post(acme, '/activity-types', { name: 'Demo' })
      expect(demo.status, JSON.stringify(demo.body)).toBe(201)
      const deals = (n: number) => Array.from({ length: n }, (_v, i) => ({
        name: `Deal ${i}`, amount: i, currency: 'EUR', status: i % 2 ? 'won' : 'open', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[1].id
      }))
      const activities = (n: number) => Array.from({ length: n }, (_v, i) => ({ subject: `Demo ${i}`, activity_type: i % 2 ? 'demo' : 'Demo' }))
      for (const [path, make] of [['/deals', deals], ['/activities', activities]] as const) {
        for (const n of [10, 100]) {
          const res = await post(acme, path, make(n))
          expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201)
        }
      }
      const won = (await t.db('deals').where({ organization_id: acme.organization.id, name: 'Deal 1' }).whereNull('deleted_at'))
      expect(won.every((deal: any) => deal.won_date !== null)).toBe(true)
      expect((await t.db('activities').where({ organization_id: acme.organization.id, subject: 'Demo 3' })).map((a: any) => a.activity_type_id)).toEqual([demo.body.id, demo.body.id])
    })

    it('when activities and companies are created in a batch, then they are stored like single creates', async () => {
      const activities = await post(acme, '/activities', [
        { subject: 'Call', activity_type: 'call', start_date: '2026-12-01' },
        { subject: 'Lunch', activity_type: 'lunch', external_id: 'crm-old-7' }
      ])
      expect(activities.status, JSON.stringify(activities.body)).toBe(201)
      expect(activities.body.map((a: any) => [a.subject, a.external_id])).toEqual([['Call', null], ['Lunch', 'crm-old-7']])
      const companies = await post(acme, '/companies', [{ name: 'One' }, { name: 'Two', website: 'https://two.test' }])
      expect(companies.status).toBe(201)
      expect(companies.body.map((c: any) => c.owned_by_user_id)).toEqual([acme.user.id, acme.user.id])
    })
  })

  describe('upsert: X-Service-Method upsert', () => {
    it('when contacts are upserted by e-mail, then a match in any case is patched with the fields sent and the others are created, in input order', async () => {
      const existing = (await post(acme, '/contacts', { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@upsert.test', custom_fields_by_name: { Budget: 1 } })).body
      let res: any
      const heard = await eventsOf('contacts', ['created', 'patched'], async () => {
        res = await method(acme, 'post', '/contacts', 'upsert', {
          idProperty: 'email',
          records: [
            { first_name: 'New One', email: 'new1@upsert.test' },
            { first_name: 'Ada Augusta', email: 'ADA@Upsert.test', custom_fields_by_name: { Budget: 2 } },
            { first_name: 'New Two', email: 'new2@upsert.test' }
          ]
        })
      })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.created).toBe(2)
      expect(res.body.updated).toBe(1)
      expect(res.body.data.map((c: any) => c.first_name)).toEqual(['New One', 'Ada Augusta', 'New Two'])
      const updated = res.body.data[1]
      expect(updated.id).toBe(existing.id)
      // Fields not sent stay as stored; the e-mail is the one sent.
      expect(updated).toMatchObject({ last_name: 'Lovelace', email: 'ADA@Upsert.test', created_by_user_id: acme.user.id, custom_fields_by_name: { Budget: 2 } })
      expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(existing.updated_at))
      const read = await t.http().get(`/contacts/${existing.id}`).set(acme.key)
      expect(read.body).toEqual(updated)
      expect(heard).toEqual([
        { event: 'created', id: res.body.data[0].id },
        { event: 'patched', id: existing.id },
        { event: 'created', id: res.body.data[2].id }
      ])

      const again = await method(acme, 'post', '/contacts', 'upsert', {
        idProperty: 'email',
        records: [{ first_name: 'New One', email: 'new1@upsert.test' }, { first_name: 'New Two', email: 'new2@upsert.test' }]
      })
      expect(again.body).toMatchObject({ created: 0, updated: 2 })
      expect((await liveContacts(acme).whereRaw("lower(email) like '%@upsert.test'")).length).toBe(3)
    })

    it('when a record has no key or repeats an earlier record\'s key, then 400 keyed by its index and nothing is written', async () => {
      const res = await method(acme, 'post', '/contacts', 'upsert', {
        idProperty: 'email',
        records: [{ first_name: 'K', email: 'k@dup.test' }, { first_name: 'No key' }, { first_name: 'K again', email: 'K@DUP.test' }]
      })
      expect(res.status).toBe(400)
      expect(res.body.errors['1'].email).toMatch(/required/)
      const repeated = await method(acme, 'post', '/contacts', 'upsert', {
        idProperty: 'email',
        records: [{ first_name: 'K', email: 'k@dup.test' }, { first_name: 'K again', email: 'K@DUP.test' }]
      })
      expect(repeated.status).toBe(400)
      expect(repeated.body.errors['1'].email).toMatch(/record 0/)
      expect(await liveContacts(acme).whereRaw("lower(email) = 'k@dup.test'")).toEqual([])
      const unknown = await method(acme, 'post', '/contacts', 'upsert', { idProperty: 'sku', records: [{ first_name: 'x' }] })
      expect(unknown.status).toBe(400)
      expect(unknown.body.errors.idProperty).toBeTruthy()
    })

    it('when an invalid record is in the batch, then 400 keyed by index and no match is changed', async () => {
      const existing = (await post(acme, '/contacts', { first_name: 'Keep', email: 'keep@upsert.test' })).body
      const res = await method(acme, 'post', '/contacts', 'upsert', {
        idProperty: 'email',
        records: [{ first_name: 'Changed', email: 'keep@upsert.test' }, { first_name: 'Bad', email: 'bad@upsert.test', company_id: otherCompany.id }]
      })
      expect(res.status).toBe(400)
      expect(res.body.errors['1'].company_id).toBeTruthy()
      expect((await t.http().get(`/contacts/${existing.id}`).set(acme.key)).body.first_name).toBe('Keep')
    })

    it('when contacts are upserted by phone, then the same number written differently matches; the same digits in another country do not', async () => {
      const existing = (await post(acme, '/contacts', { first_name: 'Phone', phone: '+44 20 7946 1111', phone_country_code: '+44' })).body
      const res = await method(acme, 'post', '/contacts', 'upsert', {
        idProperty: 'phone',
        records: [
          { first_name: 'Phone Changed', phone: '20 7946 1111', phone_country_code: '+44' },
          { first_name: 'Other country', phone: '207 946 111', phone_country_code: '+33' }
        ]
      })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ created: 1, updated: 1 })
      expect(res.body.data[0].id).toBe(existing.id)
    })

    it('when companies are upserted by domain or by name, then the website host (any case, scheme, www.) or the name in any case matches', async () => {
      const site = (await post(acme, '/companies', { name: 'Site Co', website: 'http://sitco.test/about' })).body
      const named = (await post(acme, '/companies', { name: 'Named Co' })).body
      const byDomain = await method(acme, 'post', '/companies', 'upsert', {
        idProperty: 'domain', records: [{ name: 'Site Co Ltd', website: 'https://WWW.Sitco.test' }]
      })
      expect(byDomain.status, JSON.stringify(byDomain.body)).toBe(201)
      expect(byDomain.body).toMatchObject({ created: 0, updated: 1 })
      expect(byDomain.body.data[0]).toMatchObject({ id: site.id, name: 'Site Co Ltd', website: 'https://WWW.Sitco.test' })
      const byName = await method(acme, 'post', '/companies', 'upsert', { idProperty: 'name', records: [{ name: 'NAMED CO', industry: 'Retail' }] })
      expect(byName.body.data[0]).toMatchObject({ id: named.id, industry: 'Retail' })
    })

    it('when products are upserted by sku and deals by external_id, then matches are patched and the rest created', async () => {
      const product = await createProduct(t, acme, { name: 'Sku product', sku: 'UP-1', price: 5 })
      const products = await method(acme, 'post', '/products', 'upsert', {
        idProperty: 'sku', records: [{ name: 'Sku product v2', sku: 'UP-1', price: 6 }, { name: 'Fresh', sku: 'UP-2' }]
      })
      expect(products.status, JSON.stringify(products.body)).toBe(201)
      expect(products.body.data.map((p: any) => [p.id === product.id, p.name, p.price])).toEqual([[true, 'Sku product v2', '6.00'], [false, 'Fresh', null]])

      const board = await createPipeline(t, acme)
      const base = { amount: 100, currency: 'EUR', status: 'open', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id }
      const first = await method(acme, 'post', '/deals', 'upsert', { idProperty: 'external_id', records: [{ name: 'Ext deal', external_id: 'hub-1', ...base }] })
      expect(first.status, JSON.stringify(first.body)).toBe(201)
      const second = await method(acme, 'post', '/deals', 'upsert', {
        idProperty: 'external_id', records: [{ name: 'Ext deal renamed', external_id: 'hub-1', ...base, amount: 250 }, { name: 'Another', external_id: 'hub-2', ...base }]
      })
      expect(second.body).toMatchObject({ created: 1, updated: 1 })
      expect(second.body.data[0]).toMatchObject({ id: first.body.data[0].id, name: 'Ext deal renamed', amount: '250.00' })
      // external_id is unique per organization among live records, and may repeat across organizations.
      const clash = await post(acme, '/deals', { name: 'Clash', external_id: 'hub-1', ...base })
      expect(clash.status).toBe(409)
    })

    it('when 10 or 100 contacts are upserted, then the new ones are created and the known ones updated', async () => {
      const records = (n: number, label: string) => Array.from({ length: n }, (_v, i) => ({ first_name: `${label} ${i}`, email: `${label}-${i}@count.test`, custom_fields_by_name: { Budget: i } }))
      await post(acme, '/contacts', records(50, 'hundred').slice(0, 50))
      const ten = await method(acme, 'post', '/contacts', 'upsert', { idProperty: 'email', records: records(10, 'ten') })
      expect(ten.body).toMatchObject({ created: 10, updated: 0 })
      const hundred = await method(acme, 'post', '/contacts', 'upsert', { idProperty: 'email', records: records(100, 'hundred') })
      expect(hundred.status, JSON.stringify(hundred.body).slice(0, 300)).toBe(201)
      expect(hundred.body).toMatchObject({ created: 50, updated: 50 })
      expect(await liveContacts(acme).where('email', 'like', 'hundred-%@count.test').count({ n: '*' })).toEqual([{ n: 100 }])
    })

    it('when the same new key is upserted by 6 parallel requests, then exactly one record has it', async () => {
      const responses = await Promise.all(Array.from({ length: 6 }, (_v, i) =>
        method(acme, 'post', '/contacts', 'upsert', { idProperty: 'email', records: [{ first_name: `Racer ${i}`, email: 'race@upsert.test' }, { first_name: `Solo ${i}`, email: `solo-${i}@upsert.test` }] })))
      expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201])
      expect(responses.map((r) => r.body.data[0].id).every((id) => id === responses[0].body.data[0].id)).toBe(true)
      expect(responses.filter((r) => r.body.data[0].created_at === r.body.data[0].updated_at).length).toBeGreaterThanOrEqual(1)
      expect((await liveContacts(acme).whereRaw("lower(email) = 'race@upsert.test'")).length).toBe(1)

      const skus = await Promise.all(Array.from({ length: 6 }, (_v, i) =>
        method(acme, 'post', '/products', 'upsert', { idProperty: 'sku', records: [{ name: `Raced ${i}`, sku: 'RACE-1' }] })))
      expect(skus.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201])
      expect((await t.db('products').where({ organization_id: acme.organization.id, sku: 'RACE-1' }).whereNull('deleted_at')).length).toBe(1)
    })
  })

  describe('batch-update and batch-delete', () => {
    const three = async (label: string) => (await post(acme, '/contacts', [1, 2, 3].map((i) => ({ first_name: `${label} ${i}`, last_name: 'Same' })))).body

    it('when 3 contacts are changed by PATCH with X-Service-Method batch-update, then each gets its own changes and a patched event', async () => {
      const [a, b, c] = await three('Upd')
      let res: any
      const heard = await eventsOf('contacts', ['patched'], async () => {
        res = await method(acme, 'patch', '/contacts', 'batch-update', {
          records: [{ id: c.id, last_name: 'Third' }, { id: a.id, email: 'first@upd.test', custom_fields_by_name: { Budget: 7 } }, { id: b.id, first_name: 'Second' }]
        })
      })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.map((r: any) => r.id)).toEqual([c.id, a.id, b.id])
      expect((await t.http().get(`/contacts/${a.id}`).set(acme.key)).body).toMatchObject({ email: 'first@upd.test', last_name: 'Same', custom_fields_by_name: { Budget: 7 } })
      expect((await t.http().get(`/contacts/${b.id}`).set(acme.key)).body).toMatchObject({ first_name: 'Second', last_name: 'Same' })
      expect((await t.http().get(`/contacts/${c.id}`).set(acme.key)).body.last_name).toBe('Third')
      expect(heard.map((e) => e.id)).toEqual([c.id, a.id, b.id])
      // The POST form reaches the same method.
      const posted = await method(acme, 'post', '/contacts', 'batch-update', { records: [{ id: a.id, first_name: 'Posted' }] })
      expect(posted.status).toBe(200)
      expect(posted.body[0].first_name).toBe('Posted')
    })

    it("when a batch-update names another organization's contact or an unknown id, then 404 naming it and nothing changes", async () => {
      const [a] = await three('Iso')
      const foreign = (await post(other, '/contacts', { first_name: 'Theirs' })).body
      for (const id of [foreign.id, 999999999]) {
        const res = await method(acme, 'patch', '/contacts', 'batch-update', { records: [{ id: a.id, first_name: 'Changed' }, { id, first_name: 'Hijacked' }] })
        expect(res.status).toBe(404)
        expect(res.body.message).toContain(`'${id}'`)
      }
      expect((await t.http().get(`/contacts/${a.id}`).set(acme.key)).body.first_name).toBe('Iso 1')
      expect((await t.http().get(`/contacts/${foreign.id}`).set(other.key)).body.first_name).toBe('Theirs')
    })

    it('when one change of a batch-update is invalid, then 400 keyed by index and no record changes', async () => {
      const [a, b] = await three('Atomic')
      const res = await method(acme, 'patch', '/contacts', 'batch-update', {
        records: [{ id: a.id, first_name: 'Changed' }, { id: b.id, email: 'nope' }, { id: a.id, last_name: 'twice' }]
      })
      expect(res.status).toBe(400)
      expect(res.body.errors['2'].id).toBeTruthy()
      const invalid = await method(acme, 'patch', '/contacts', 'batch-update', { records: [{ id: a.id, first_name: 'Changed' }, { id: b.id, company_id: otherCompany.id }] })
      expect(invalid.status).toBe(400)
      expect(invalid.body.errors['1'].company_id).toBeTruthy()
      expect((await t.http().get(`/contacts/${a.id}`).set(acme.key)).body.first_name).toBe('Atomic 1')
    })

    it('when deal products are batch-updated, then each line is re-priced', async () => {
      const board = await createPipeline(t, acme)
      const deal = await createDeal(t, acme, board)
      const product = await createProduct(t, acme, { name: 'Priced', price: 10 })
      const lines = (await post(acme, '/deal-products', [{ deal_id: deal.id, product_id: product.id, quantity: 1 }, { deal_id: deal.id, product_id: product.id, quantity: 2 }])).body
      const res = await method(acme, 'patch', '/deal-products', 'batch-update', { records: [{ id: lines[0].id, quantity: 3 }, { id: lines[1].id, discount_type: 'percentage', discount_percentage: 50 }] })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.map((line: any) => line.total_amount_without_tax)).toEqual(['30.00', '10.00'])
    })

    it('when contacts are deleted by batch-delete, then they are soft-deleted with removed events; another org\'s id is a 404 and nothing is deleted', async () => {
      const [a, b, c] = await three('Del')
      const foreign = (await post(other, '/contacts', { first_name: 'Not yours' })).body
      const refused = await method(acme, 'patch', '/contacts', 'batch-delete', { ids: [a.id, foreign.id] })
      expect(refused.status).toBe(404)
      expect(refused.body.message).toContain(`'${foreign.id}'`)
      expect((await t.http().get(`/contacts/${a.id}`).set(acme.key)).status).toBe(200)
      expect((await t.http().get(`/contacts/${foreign.id}`).set(other.key)).status).toBe(200)

      let res: any
      const heard = await eventsOf('contacts', ['removed'], async () => {
        res = await method(acme, 'patch', '/contacts', 'batch-delete', { ids: [b.id, a.id] })
      })
      expect(res.status).toBe(200)
      expect(res.body.map((r: any) => r.id)).toEqual([b.id, a.id])
      expect(res.body[0].deleted_at).toEqual(expect.stringMatching(/Z$/))
      expect(heard.map((e) => [e.event, e.id])).toEqual([['removed', b.id], ['removed', a.id]])
      expect((await t.http().get(`/contacts/${a.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(`/contacts/${c.id}`).set(acme.key)).status).toBe(200)
      // Deleting them again: they are no longer live records.
      expect((await method(acme, 'patch', '/contacts', 'batch-delete', { ids: [a.id] })).status).toBe(404)
    })

    it("when products are batch-deleted, then their media are deleted with them, as a single delete does", async () => {
      const product = await createProduct(t, acme, { name: 'With media' })
      const medium = (position: number) => ({
        organization_id: acme.organization.id, product_id: product.id, position, file_name: `${position}.png`, file_type: 'image/png',
        file_size: 1, file_path: `p/${product.id}/${position}.png`, storage_key: `batch-${product.id}-${position}`, storage_path: `p/${product.id}/${position}.png`
      })
      await t.db('product_media').insert([medium(0), medium(1)])
      const media = await t.db('product_media').where({ product_id: product.id })
      expect(media).toHaveLength(2)
      const res = await method(acme, 'patch', '/products', 'batch-delete', { ids: [product.id] })
      expect(res.status).toBe(200)
      const after = await t.db('product_media').where({ product_id: product.id })
      expect(after.every((row: any) => row.deleted_at !== null)).toBe(true)
      expect(after.length).toBe(media.length)
      // These rows have no files: marked purged, so that no purge pass of a test sharing the database counts them.
      await t.db('product_media').where({ product_id: product.id }).update({ purged_at: t.db.fn.now() })
    })
  })

  describe('rate limits', () => {
    it('when batches exceed BATCH_RECORDS_PER_HOUR, then 429 in the spec shape and nothing is written; a batch counts as one API-key request', async () => {
      const limited = await startApp({ batchRecordsPerHour: 5, rateLimitPoints: 50 })
      try {
        const tenant = await createTenant(limited, 'Budget')
        const send = (records: unknown[]) => limited.http().post('/contacts').set(tenant.key).send(records)
        const first = await send([{ first_name: 'B1' }, { first_name: 'B2' }, { first_name: 'B3' }])
        expect(first.status).toBe(201)
        const remaining = Number(first.headers['ratelimit-remaining'])
        const over = await send([{ first_name: 'B4' }, { first_name: 'B5' }, { first_name: 'B6' }])
        expect(over.status).toBe(429)
        expect(over.body).toMatchObject({ name: 'TooManyRequests', code: 429, data: { limit: 5, current: 3, window: 3600, retryAfter: expect.any(Number) } })
        expect(Number(over.headers['retry-after'])).toBeGreaterThan(0)
        const upsert = await limited.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'upsert')
          .send({ idProperty: 'email', records: [{ first_name: 'U', email: 'u@b.test' }, { first_name: 'V', email: 'v@b.test' }, { first_name: 'W', email: 'w@b.test' }] })
        expect(upsert.status).toBe(429)
        expect(await limited.db('contacts').where({ organization_id: tenant.organization.id })).toHaveLength(3)
        // Two records still fit; and the batch of three cost one request, as single creates do.
        const fits = await send([{ first_name: 'B4' }, { first_name: 'B5' }])
        expect(fits.status).toBe(201)
        const single = await limited.http().post('/contacts').set(tenant.key).send({ first_name: 'Single' })
        expect(single.status).toBe(201)
        expect(Number(single.headers['ratelimit-remaining'])).toBe(remaining - 4)
      } finally {
        await limited.close()
      }
    })
  })

  it('when the OpenAPI document is read, then the array body and the batch methods are in it', async () => {
    const doc = (await t.http().get('/openapi.json')).body
    const ref = { $ref: '#/components/schemas/ContactData' }
    expect(doc.paths['/contacts'].post.requestBody.content['application/json'].schema).toEqual({ oneOf: [ref, { type: 'array', items: ref, minItems: 1, maxItems: 100 }] })
    expect(doc.paths['/contacts#upsert'].post.responses['201']).toBeTruthy()
    expect(doc.components.schemas.ContactsUpsert.properties.idProperty.enum).toEqual(['email', 'phone', 'external_id'])
    expect(doc.paths['/deals#batch-update'].patch).toBeTruthy()
    expect(doc.paths['/products#batch-delete'].post).toBeTruthy()
  })
})
