import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline, createProduct } from './deal-fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('deal products', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let deal: any
  let product: any

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    deal = await createDeal(t, acme, await createPipeline(t, acme))
    product = await createProduct(t, acme, { name: 'Consulting day', sku: 'CONS-1', price: 100, tax_percentage: 21 })
  })
  afterAll(async () => {
    await t.close()
  })

  const add = (body: Record<string, unknown>, tenant = acme) =>
    t.http().post('/deal-products').set(tenant.key).send({ deal_id: deal.id, product_id: product.id, ...body })

  describe('create', () => {
    it('when a line is added with a percentage discount and tax, then 201 with the full record and the spec example totals', async () => {
      const res = await add({ quantity: 2, price: 100, description: 'Two days', discount_type: 'percentage', discount_percentage: 10, tax_percentage: 21 })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number),
        organization_id: acme.organization.id,
        deal_id: deal.id,
        product_id: product.id,
        quantity: '2.0000',
        price: '100.00',
        description: 'Two days',
        discount_type: 'percentage',
        discount_amount: null,
        discount_percentage: '10.00',
        tax_percentage: '21.00',
        total_amount_without_tax: '180.00',
        total_amount_with_tax: '217.80',
        name: 'Consulting day',
        sku: 'CONS-1',
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        external_id: null, deleted_at: null
      })
      const read = await t.http().get(`/deal-products/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual(res.body)
    })

    it.each([
      ['percentage discount', { quantity: 2, price: 100, discount_type: 'percentage', discount_percentage: 10, tax_percentage: 21 }, '180.00', '217.80'],
      ['fixed discount', { quantity: 3, price: 19.99, discount_type: 'fixed', discount_amount: 5, tax_percentage: 21 }, '54.97', '66.51'],
      ['zero tax', { quantity: 4, price: 12.5, tax_percentage: 0 }, '50.00', '50.00'],
      ['fractional quantity', { quantity: 1.25, price: 80, tax_percentage: 10 }, '100.00', '110.00'],
      ['fractional quantity with four places', { quantity: 0.3333, price: 30, tax_percentage: 0 }, '10.00', '10.00'],
      // 1.5 × 2.67 = 4.005 exactly: half-up gives 4.01 (binary floats give 4.00).
      ['net rounding at .005', { quantity: 1.5, price: 2.67, tax_percentage: 0 }, '4.01', '4.01'],
      // 10.01 × 50 % = 5.005 → 5.01 (binary floats give 5.00).
      ['percentage discount rounding at .005', { quantity: 1, price: 10.01, discount_type: 'percentage', discount_percentage: 50, tax_percentage: 0 }, '5.01', '5.01'],
      // 0.05 × 1.10 = 0.055 → 0.06; 1.05 × 1.10 = 1.155 → 1.16.
      ['tax rounding at .005', { quantity: 1, price: 0.05, tax_percentage: 10 }, '0.05', '0.06'],
      ['tax rounding at .005 on a larger amount', { quantity: 3, price: 0.35, tax_percentage: 10 }, '1.05', '1.16'],
      ['fixed discount equal to the subtotal', { quantity: 2, price: 10, discount_type: 'fixed', discount_amount: 20, tax_percentage: 21 }, '0.00', '0.00'],
      ['100 % discount', { quantity: 7, price: 3.33, discount_type: 'percentage', discount_percentage: 100, tax_percentage: 21 }, '0.00', '0.00'],
      ['fractional tax', { quantity: 1, price: 99.99, tax_percentage: 7.75 }, '99.99', '107.74'],
      ['large amounts stay exact', { quantity: 1000000, price: 123456.78, tax_percentage: 21 }, '123456780000.00', '149382703800.00']
    ])('when the line has a %s, then the totals are exact to the cent', async (_label, line, withoutTax, withTax) => {
      const res = await add(line)
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ total_amount_without_tax: withoutTax, total_amount_with_tax: withTax })
      const read = await t.http().get(`/deal-products/${res.body.id}`).set(acme.key)
      expect(read.body).toMatchObject({ total_amount_without_tax: withoutTax, total_amount_with_tax: withTax })
    })

    it('when price and tax are left out, then the product\'s price and tax are used', async () => {
      const res = await add({ quantity: 3 })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ price: '100.00', tax_percentage: '21.00', discount_type: null, total_amount_without_tax: '300.00', total_amount_with_tax: '363.00' })
    })

    it('when the product has neither price nor tax and the line sends no price, then 400 with errors.price', async () => {
      const bare = await createProduct(t, acme, { name: 'Free-form', price: null })
      const res = await add({ product_id: bare.id, quantity: 1 })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ price: 'is required: the product has no price' })
      const ok = await add({ product_id: bare.id, quantity: 1, price: 10 })
      expect(ok.body).toMatchObject({ tax_percentage: '0.00', total_amount_with_tax: '10.00' })
    })

    it('when quantity, price and percentages are decimal strings, then the totals are computed exactly from them', async () => {
      const res = await add({ quantity: '2.5', price: '10.10', discount_type: 'percentage', discount_percentage: '10', tax_percentage: '21.5' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({ quantity: '2.5000', price: '10.10', discount_percentage: '10.00', tax_percentage: '21.50', total_amount_without_tax: '22.73', total_amount_with_tax: '27.62' })
    })

    it('when a JSON number has more decimals than a float keeps, then 400 naming the field', async () => {
      const body = `{"deal_id":${deal.id},"product_id":${product.id},"quantity":1.000000000000000001,"price":5}`
      const res = await t.http().post('/deal-products').set(acme.key).set('Content-Type', 'application/json').send(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ quantity: 'must have at most 4 decimal places' })
    })

    it('when a fixed discount is above the line subtotal, then 400 with errors.discount_amount and nothing is written', async () => {
      const before = await t.db('deal_products').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const res = await add({ quantity: 2, price: 10, discount_type: 'fixed', discount_amount: 20.01 })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ discount_amount: 'must not be above the line subtotal (20)' })
      const after = await t.db('deal_products').where({ organization_id: acme.organization.id }).count({ n: '*' })
      expect(after[0].n).toBe(before[0].n)
    })

    it.each([
      [{ quantity: 1, discount_type: 'percentage' }, { discount_percentage: "is required with discount_type 'percentage'" }],
      [{ quantity: 1, discount_type: 'fixed' }, { discount_amount: "is required with discount_type 'fixed'" }],
      [{ quantity: 1, discount_type: 'percentage', discount_percentage: 10, discount_amount: 5 }, { discount_amount: "is only used with discount_type 'fixed'" }],
      [{ quantity: 1, discount_percentage: 10 }, { discount_percentage: "is only used with discount_type 'percentage'" }],
      [{ quantity: 1, discount_type: 'percentage', discount_percentage: 100.01 }, { discount_percentage: 'must be at most 100' }],
      [{ quantity: 1, discount_type: 'bogus', discount_amount: 1 }, { discount_type: expect.any(String) }],
      [{ quantity: 1, tax_percentage: -1 }, { tax_percentage: 'must be at least 0' }],
      [{ quantity: 0 }, { quantity: 'must be greater than 0' }],
      [{ quantity: 1.00001 }, { quantity: 'must have at most 4 decimal places' }],
      [{ quantity: 1, price: 1.001 }, { price: 'must have at most 2 decimal places' }],
      [{ quantity: 'two' }, { quantity: 'must be a quantity greater than 0 like 2.5, with at most 4 decimal places' }],
      [{ quantity: '0.0000' }, { quantity: 'must be a quantity greater than 0 like 2.5, with at most 4 decimal places' }],
      [{ quantity: 1, tax_percentage: '100.5' }, { tax_percentage: 'must be a percentage from 0 to 100 like 7.5, with at most 2 decimal places' }],
      [{}, { quantity: 'is required' }],
      [{ quantity: 1, name: 'Renamed' }, { name: 'is not allowed' }],
      [{ quantity: 1, total_amount_with_tax: 1 }, { total_amount_with_tax: 'is not allowed' }],
      [{ quantity: 9_000_000_000, price: 1000 }, { quantity: 'makes the line total larger than 999999999999.99' }],
      [{ quantity: 900_000_000, price: 1000, tax_percentage: 21 }, { quantity: 'makes the line total larger than 999999999999.99' }]
    ])('when the body is %j, then 400 with the field errors', async (body, errors) => {
      const res = await add(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual(errors)
    })

    it('when the deal or the product is deleted, then 400 naming the field', async () => {
      const board = await createPipeline(t, acme, ['Only'])
      const gone = await createDeal(t, acme, board)
      await t.http().delete(`/deals/${gone.id}`).set(acme.key).expect(200)
      const onDeletedDeal = await add({ deal_id: gone.id, quantity: 1 })
      expect(onDeletedDeal.status).toBe(400)
      expect(onDeletedDeal.body.errors).toEqual({ deal_id: 'must be a deal of this organization' })

      const retired = await createProduct(t, acme, { name: 'Retired', sku: 'RET-1' })
      await t.http().delete(`/products/${retired.id}`).set(acme.key).expect(200)
      const ofDeletedProduct = await add({ product_id: retired.id, quantity: 1 })
      expect(ofDeletedProduct.status).toBe(400)
      expect(ofDeletedProduct.body.errors).toEqual({ product_id: 'must be a product of this organization' })
    })

    it('when the product is renamed later, then the line keeps the name and SKU it was created with', async () => {
      const renamed = await createProduct(t, acme, { name: 'Old name', sku: 'OLD-1' })
      const line = (await add({ product_id: renamed.id, quantity: 1 })).body
      await t.http().patch(`/products/${renamed.id}`).set(acme.key).send({ name: 'New name', sku: 'NEW-1' }).expect(200)
      const read = await t.http().get(`/deal-products/${line.id}`).set(acme.key)
      expect(read.body).toMatchObject({ name: 'Old name', sku: 'OLD-1' })
    })
  })

  describe('patch', () => {
    it('when quantity, price or tax change, then the totals are recomputed and read back', async () => {
      const line = (await add({ quantity: 2, price: 100, discount_type: 'percentage', discount_percentage: 10, tax_percentage: 21 })).body
      const res = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ quantity: 1.5 })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ quantity: '1.5000', total_amount_without_tax: '135.00', total_amount_with_tax: '163.35' })
      const taxed = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ tax_percentage: 0, price: 50 })
      expect(taxed.body).toMatchObject({ price: '50.00', tax_percentage: '0.00', total_amount_without_tax: '67.50', total_amount_with_tax: '67.50' })
      const read = await t.http().get(`/deal-products/${line.id}`).set(acme.key)
      expect(read.body).toEqual(taxed.body)
    })

    it('when the discount type switches, then the other discount column becomes null', async () => {
      const line = (await add({ quantity: 2, price: 100, discount_type: 'percentage', discount_percentage: 10, tax_percentage: 0 })).body
      const fixed = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ discount_type: 'fixed', discount_amount: 25.5 })
      expect(fixed.status, JSON.stringify(fixed.body)).toBe(200)
      expect(fixed.body).toMatchObject({ discount_type: 'fixed', discount_amount: '25.50', discount_percentage: null, total_amount_without_tax: '174.50' })
      const none = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ discount_type: null })
      expect(none.body).toMatchObject({ discount_type: null, discount_amount: null, discount_percentage: null, total_amount_without_tax: '200.00' })
      const back = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ discount_type: 'percentage' })
      expect(back.status).toBe(400)
      expect(back.body.errors).toEqual({ discount_percentage: "is required with discount_type 'percentage'" })
    })

    it('when a smaller quantity would put a fixed discount above the subtotal, then 400 and the line is unchanged', async () => {
      const line = (await add({ quantity: 3, price: 10, discount_type: 'fixed', discount_amount: 25, tax_percentage: 0 })).body
      const res = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ quantity: 2 })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ discount_amount: 'must not be above the line subtotal (20)' })
      const read = await t.http().get(`/deal-products/${line.id}`).set(acme.key)
      expect(read.body).toMatchObject({ quantity: '3.0000', total_amount_without_tax: '5.00' })
    })

    it('when the patch names a field that is not patchable, then 400', async () => {
      const line = (await add({ quantity: 1 })).body
      const res = await t.http().patch(`/deal-products/${line.id}`).set(acme.key).send({ deal_id: deal.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ deal_id: 'is not allowed' })
    })
  })

  describe('find and delete', () => {
    it('when listing by deal_id, then only that deal\'s live lines come back', async () => {
      const other = await createDeal(t, acme, await createPipeline(t, acme, ['S']))
      const a = (await add({ deal_id: other.id, quantity: 1 })).body
      const b = (await add({ deal_id: other.id, quantity: 2 })).body
      await t.http().delete(`/deal-products/${a.id}`).set(acme.key).expect(200)
      const res = await t.http().get('/deal-products').set(acme.key).send({ query: { deal_id: other.id } })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 1, limit: 10, skip: 0 })
      expect(res.body.data.map((row: any) => row.id)).toEqual([b.id])
    })

    it('when a line is deleted, then it comes back with deleted_at and is gone afterwards', async () => {
      const line = (await add({ quantity: 1 })).body
      const res = await t.http().delete(`/deal-products/${line.id}`).set(acme.key)
      expect(res.status).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`/deal-products/${line.id}`).set(acme.key)).status).toBe(404)
    })

    it('when the deal is deleted, then its lines are deleted at the same instant', async () => {
      const doomed = await createDeal(t, acme, await createPipeline(t, acme, ['S']))
      const line = (await add({ deal_id: doomed.id, quantity: 1 })).body
      const removed = await t.http().delete(`/deals/${doomed.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect((await t.http().get(`/deal-products/${line.id}`).set(acme.key)).status).toBe(404)
      const [row] = await t.db('deal_products').where({ id: line.id })
      expect(row.deleted_at.toISOString()).toBe(removed.body.deleted_at)
    })
  })

  describe('cross-organization attempts', () => {
    let foreignLine: any
    let foreignDeal: any
    let foreignProduct: any
    beforeAll(async () => {
      foreignDeal = await createDeal(t, globex, await createPipeline(t, globex))
      foreignProduct = await createProduct(t, globex, { name: 'Foreign', sku: 'F-1' })
      const res = await t.http().post('/deal-products').set(globex.key).send({ deal_id: foreignDeal.id, product_id: foreignProduct.id, quantity: 1 })
      foreignLine = res.body
    })

    it('when another organization reads, patches or deletes a line by id, then 404 and it is unchanged', async () => {
      const read = await t.http().get(`/deal-products/${foreignLine.id}`).set(acme.key)
      expect(read.status).toBe(404)
      expect(read.body).toEqual({ name: 'NotFound', message: `No record found for id '${foreignLine.id}'`, code: 404, className: 'not-found' })
      expect((await t.http().patch(`/deal-products/${foreignLine.id}`).set(acme.key).send({ quantity: 9 })).status).toBe(404)
      expect((await t.http().delete(`/deal-products/${foreignLine.id}`).set(acme.key)).status).toBe(404)
      const own = await t.http().get(`/deal-products/${foreignLine.id}`).set(globex.key)
      expect(own.body).toMatchObject({ quantity: '1.0000', deleted_at: null })
    })

    it('when a key lists or creates with another organization_id, then 403', async () => {
      const list = await t.http().get('/deal-products').set(acme.key).send({ query: { organization_id: globex.organization.id } })
      expect(list.status).toBe(403)
      const create = await add({ organization_id: globex.organization.id, deal_id: foreignDeal.id, product_id: foreignProduct.id, quantity: 1 })
      expect(create.status).toBe(403)
    })

    it('when the deal or the product belongs to another organization, then 400 naming the field', async () => {
      const res = await add({ deal_id: foreignDeal.id, quantity: 1 })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ deal_id: 'must be a deal of this organization' })
      const product2 = await add({ product_id: foreignProduct.id, quantity: 1 })
      expect(product2.status).toBe(400)
      expect(product2.body.errors).toEqual({ product_id: 'must be a product of this organization' })
    })
  })
})
