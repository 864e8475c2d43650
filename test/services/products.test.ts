import { describe, it, expect, beforeAll } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createProduct } from './deal-fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('products', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const search = (body: Record<string, unknown>, tenant = acme) =>
    t.http().post('/products').set(tenant.key).set('X-Service-Method', 'search').send(body)

  describe('create and patch', () => {
    it('when a product is created, then 201 with price and tax as decimal strings and active true', async () => {
      const res = await t.http().post('/products').set(acme.key).send({ name: 'Gadget', sku: 'GAD-1', description: 'Shiny', price: 49.9, currency: 'USD', tax_percentage: 8.25 })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, name: 'Gadget', sku: 'GAD-1', description: 'Shiny',
        price: '49.90', currency: 'USD', tax_percentage: '8.25', active: true,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), external_id: null, deleted_at: null
      })
      expect((await t.http().get(`/products/${res.body.id}`).set(acme.key)).body).toEqual(res.body)
    })

    it.each([
      [{}, { name: 'is required' }],
      [{ name: 'X', price: -1 }, { price: 'must be at least 0' }],
      [{ name: 'X', price: 1.005 }, { price: 'must have at most 2 decimal places' }],
      [{ name: 'X', tax_percentage: 100.5 }, { tax_percentage: 'must be at most 100' }],
      [{ name: 'X', currency: 'QQQ' }, { currency: 'must be an ISO 4217 currency code' }],
      [{ name: 'X', active: 'yes' }, { active: 'must be true or false' }]
    ])('when the body is %j, then 400 with the field errors', async (body, errors) => {
      const res = await t.http().post('/products').set(acme.key).send(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual(errors)
    })

    it('when a SKU is taken by a live product, then 409 with errors.sku; once that product is deleted, the SKU is free', async () => {
      const first = await createProduct(t, acme, { sku: 'DUP-1' })
      const dup = await t.http().post('/products').set(acme.key).send({ name: 'Copy', sku: 'DUP-1' })
      expect(dup.status).toBe(409)
      expect(dup.body.errors).toEqual({ sku: 'is already taken' })
      const other = await t.http().post('/products').set(globex.key).send({ name: 'Same SKU elsewhere', sku: 'DUP-1' })
      expect(other.status).toBe(201)
      await t.http().delete(`/products/${first.id}`).set(acme.key).expect(200)
      const reuse = await t.http().post('/products').set(acme.key).send({ name: 'Successor', sku: 'DUP-1' })
      expect(reuse.status).toBe(201)
    })

    it('when a product is patched, then the change is read back', async () => {
      const product = await createProduct(t, acme, { sku: 'PAT-1' })
      const res = await t.http().patch(`/products/${product.id}`).set(acme.key).send({ price: 0.1, active: false, tax_percentage: null })
      expect(res.status).toBe(200)
      expect((await t.http().get(`/products/${product.id}`).set(acme.key)).body).toMatchObject({ price: '0.10', active: false, tax_percentage: null })
    })

    it('when a product is deleted, then it comes back with deleted_at and is gone afterwards', async () => {
      const product = await createProduct(t, acme, { sku: 'DEL-1' })
      const res = await t.http().delete(`/products/${product.id}`).set(acme.key)
      expect(res.status).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`/products/${product.id}`).set(acme.key)).status).toBe(404)
    })
  })

  describe('find and search', () => {
    let org: Tenant
    beforeAll(async () => {
      org = await createTenant(t, 'Catalogue')
      await createProduct(t, org, { name: 'Blue Widget', sku: 'W-BLUE' })
      await createProduct(t, org, { name: 'Red widget', sku: 'W-RED', active: false })
      await createProduct(t, org, { name: 'Gizmo 100%', sku: 'GZ_1' })
    })
    const names = (res: any) => res.body.data.map((p: any) => p.name).sort()

    it.each([
      [{ name: 'widget' }, ['Blue Widget', 'Red widget']],
      [{ name: 'WIDG' }, ['Blue Widget', 'Red widget']],
      [{ name: '100%' }, ['Gizmo 100%']],
      [{ name: '%' }, ['Gizmo 100%']],
      [{ sku: 'W-RED' }, ['Red widget']],
      [{ sku: 'W-' }, []],
      [{ active: false }, ['Red widget']],
      [{ active: true, name: 'widget' }, ['Blue Widget']]
    ])('when filtering with %j, then the matching products come back', async (query, expected) => {
      const res = await t.http().get('/products').set(org.key).send({ query })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(names(res)).toEqual(expected)
      expect(res.body.total).toBe(expected.length)
    })

    it('when active comes as text in the query string, then it is coerced', async () => {
      const res = await t.http().get('/products').set(org.key).query({ active: 'false' })
      expect(names(res)).toEqual(['Red widget'])
    })

    it('when searching by part of a name or SKU, then the list envelope holds the matches', async () => {
      const byName = await search({ searchTerm: 'widget' }, org)
      expect(byName.status, JSON.stringify(byName.body)).toBe(200)
      expect(byName.body).toMatchObject({ total: 2, limit: 10, skip: 0 })
      // Neither name starts with the term: the other matches come newest first.
      expect(byName.body.data.map((p: any) => p.name)).toEqual(['Red widget', 'Blue Widget'])
      const bySku = await search({ searchTerm: 'gz_' }, org)
      expect(bySku.body.data.map((p: any) => p.sku)).toEqual(['GZ_1'])
      expect(bySku.body.data[0]).toMatchObject({ price: '100.00', active: true })
      const limited = await search({ searchTerm: 'w-', $limit: 1 }, org)
      expect(limited.body.data).toHaveLength(1)
    })

    it('when a search pages with $skip, then the next page comes with the same exact total', async () => {
      const second = await search({ searchTerm: 'widget', $limit: 1, $skip: 1 }, org)
      expect(second.body).toMatchObject({ total: 2, limit: 1, skip: 1 })
      expect(second.body.data.map((p: any) => p.name)).toEqual(['Blue Widget'])
      const past = await search({ searchTerm: 'widget', $skip: 5 }, org)
      expect(past.body).toEqual({ total: 2, total_capped: false, limit: 10, skip: 5, data: [] })
    })

    it('when the search term is shorter than 2 characters or missing, then 400 with errors.searchTerm', async () => {
      expect((await search({ searchTerm: 'w' }, org)).body.errors).toEqual({ searchTerm: 'must have at least 2 characters' })
      expect((await search({}, org)).body.errors).toEqual({ searchTerm: 'is required' })
    })
  })

  describe('cross-organization attempts', () => {
    let foreign: any
    beforeAll(async () => {
      foreign = await createProduct(t, globex, { name: 'Globex Secret Widget', sku: 'G-1' })
    })

    it('when another organization reads, patches or deletes a product by id, then 404 and it is unchanged', async () => {
      const read = await t.http().get(`/products/${foreign.id}`).set(acme.key)
      expect(read.status).toBe(404)
      expect(read.body).toEqual({ name: 'NotFound', message: `No record found for id '${foreign.id}'`, code: 404, className: 'not-found' })
      expect((await t.http().patch(`/products/${foreign.id}`).set(acme.key).send({ price: 1 })).status).toBe(404)
      expect((await t.http().delete(`/products/${foreign.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(`/products/${foreign.id}`).set(globex.key)).body).toMatchObject({ price: '100.00', deleted_at: null })
    })

    it('when a key lists, creates or searches with another organization_id, then 403', async () => {
      expect((await t.http().get('/products').set(acme.key).send({ query: { organization_id: globex.organization.id } })).status).toBe(403)
      expect((await t.http().post('/products').set(acme.key).send({ name: 'Planted', organization_id: globex.organization.id })).status).toBe(403)
      expect((await search({ searchTerm: 'Secret', organization_id: globex.organization.id })).status).toBe(403)
    })

    it("when searching in the own organization, then another organization's products never appear", async () => {
      const res = await search({ searchTerm: 'Secret' })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual([])
    })
  })
})
