import { describe, it, expect, beforeAll } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('companies', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const create = (tenant: Tenant, body: Record<string, unknown>) =>
    t.http().post('/companies').set(tenant.key).send(body)

  describe('create', () => {
    it('when a company is created with an API key, then 201 with the spec fields and defaults', async () => {
      const res = await create(acme, { name: 'Initech', website: 'https://initech.example', industry: 'Software', size: 'Small', description: 'TPS reports' })
      expect(res.status).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number),
        organization_id: acme.organization.id,
        name: 'Initech',
        description: 'TPS reports',
        website: 'https://initech.example',
        industry: 'Software',
        size: 'Small',
        created_by_user_id: acme.user.id,
        owned_by_user_id: acme.user.id,
        custom_fields_by_name: {},
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        external_id: null, deleted_at: null
      })
      const read = await t.http().get(`/companies/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual(res.body)
    })

    it('when name is missing, then 400 with errors.name', async () => {
      const res = await create(acme, { website: 'https://nameless.example' })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request', errors: { name: 'is required' } })
    })

    it('when website is not a URL, then 400 with errors.website and nothing is written', async () => {
      const before = await t.db('companies').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const res = await create(acme, { name: 'Bad Site', website: 'not a url' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toHaveProperty('website')
      const after = await t.db('companies').where({ organization_id: acme.organization.id }).count({ n: '*' })
      expect(after[0].n).toBe(before[0].n)
    })

    it.each([
      ['id', 999],
      ['created_by_user_id', 1],
      ['created_at', '2020-01-01T00:00:00.000Z'],
      ['deleted_at', '2020-01-01T00:00:00.000Z'],
      ['updated_at', '2020-01-01T00:00:00.000Z']
    ])('when the body sets the read-only field %s, then 400 naming it', async (field, value) => {
      const res = await create(acme, { name: 'Sneaky', [field]: value })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ [field]: 'is not allowed' })
    })

    it('when owned_by_user_id is a member of the organization, then it is kept', async () => {
      const member = await addMember(t, acme, 'member')
      const res = await create(acme, { name: 'Owned', owned_by_user_id: member.user.id })
      expect(res.status).toBe(201)
      expect(res.body.owned_by_user_id).toBe(member.user.id)
    })

    it('when a JWT caller creates without organization_id, then 400 with errors.organization_id', async () => {
      const res = await t.http().post('/companies').set(acme.bearer).send({ name: 'No org' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ organization_id: 'is required' })
    })

    it('when a JWT caller creates in their organization, then 201', async () => {
      const res = await t.http().post('/companies').set(acme.bearer).send({ name: 'By token', organization_id: acme.organization.id })
      expect(res.status).toBe(201)
      expect(res.body.organization_id).toBe(acme.organization.id)
    })
  })

  describe('cross-organization attempts', () => {
    let globexCompany: any

    beforeAll(async () => {
      globexCompany = (await create(globex, { name: 'Globex Secret' })).body
    })

    it('when another organization reads a company by id with a key, then 404 NotFound', async () => {
      const res = await t.http().get(`/companies/${globexCompany.id}`).set(acme.key)
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ name: 'NotFound', message: `No record found for id '${globexCompany.id}'`, code: 404, className: 'not-found' })
      const byToken = await t.http().get(`/companies/${globexCompany.id}`).set(acme.bearer)
      expect(byToken.status).toBe(404)
    })

    it('when another organization patches or deletes by id, then 404 and the record is unchanged', async () => {
      const patch = await t.http().patch(`/companies/${globexCompany.id}`).set(acme.key).send({ name: 'Hijacked' })
      expect(patch.status).toBe(404)
      const remove = await t.http().delete(`/companies/${globexCompany.id}`).set(acme.bearer)
      expect(remove.status).toBe(404)
      const read = await t.http().get(`/companies/${globexCompany.id}`).set(globex.key)
      expect(read.body).toMatchObject({ name: 'Globex Secret', deleted_at: null })
    })

    it('when a key lists with another organization_id, then 403 Forbidden', async () => {
      const res = await t.http().get('/companies').set(acme.key).send({ query: { organization_id: globex.organization.id } })
      expect(res.status).toBe(403)
      expect(res.body).toMatchObject({ name: 'Forbidden', code: 403, className: 'forbidden' })
      expect(res.body.message).toMatch(/permission.*administrator/i)
    })

    it('when a key creates into another organization, then 403 and nothing is written', async () => {
      const res = await create(acme, { name: 'Planted', organization_id: globex.organization.id })
      expect(res.status).toBe(403)
      // Neither organization holds it (one organization's rows at a time: a single-shard read on Citus).
      for (const organization of [acme, globex]) expect(await t.db('companies').where({ organization_id: organization.organization.id, name: 'Planted' }).first()).toBeUndefined()
    })

    it('when a JWT user lists an organization they do not belong to, then 403', async () => {
      const res = await t.http().get('/companies').set(acme.bearer).query({ organization_id: globex.organization.id })
      expect(res.status).toBe(403)
    })

    it('when the owner reference is a user of another organization, then 400 with errors.owned_by_user_id', async () => {
      const res = await create(acme, { name: 'Foreign owner', owned_by_user_id: globex.user.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ owned_by_user_id: 'must be a member of this organization' })
      const patch = await t.http().patch(`/companies/${globexCompany.id}`).set(globex.key).send({ owned_by_user_id: acme.user.id })
      expect(patch.status).toBe(400)
    })

    it('when a search names another organization, then 403', async () => {
      const res = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'search').send({ searchTerm: 'Globex', organization_id: globex.organization.id })
      expect(res.status).toBe(403)
    })

    it('when a search runs in the own organization, then it never returns another tenant\'s rows', async () => {
      const res = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'search').send({ searchTerm: 'Globex' })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual([])
    })

    it('when a patch tries to move a record to another organization, then 400 and it stays', async () => {
      const mine = (await create(acme, { name: 'Stay home' })).body
      const res = await t.http().patch(`/companies/${mine.id}`).set(acme.key).send({ organization_id: globex.organization.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ organization_id: 'is not allowed' })
      const read = await t.http().get(`/companies/${mine.id}`).set(acme.key)
      expect(read.body.organization_id).toBe(acme.organization.id)
    })
  })

  describe('patch and soft delete', () => {
    it('when a company is patched, then only the sent fields change and updated_at moves', async () => {
      const created = (await create(acme, { name: 'Before', industry: 'Retail' })).body
      await new Promise((r) => setTimeout(r, 5))
      const res = await t.http().patch(`/companies/${created.id}`).set(acme.key).send({ name: 'After', size: 'Large' })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ name: 'After', size: 'Large', industry: 'Retail', created_at: created.created_at })
      expect(new Date(res.body.updated_at).getTime()).toBeGreaterThan(new Date(created.updated_at).getTime())
      const read = await t.http().get(`/companies/${created.id}`).set(acme.key)
      expect(read.body).toEqual(res.body)
    })

    it('when a company is deleted, then it is returned with deleted_at = updated_at and is gone from every read', async () => {
      const created = (await create(acme, { name: 'Doomed Corp' })).body
      const res = await t.http().delete(`/companies/${created.id}`).set(acme.key)
      expect(res.status).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`/companies/${created.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().patch(`/companies/${created.id}`).set(acme.key).send({ name: 'Zombie' })).status).toBe(404)
      expect((await t.http().delete(`/companies/${created.id}`).set(acme.key)).status).toBe(404)
      const list = await t.http().get('/companies').set(acme.key).send({ query: { name: 'Doomed Corp' } })
      expect(list.body.total).toBe(0)
      const search = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'search').send({ searchTerm: 'Doomed' })
      expect(search.body.data).toEqual([])
      const row = await t.db('companies').where({ organization_id: acme.organization.id, id: created.id }).first()
      expect(row.deleted_at).not.toBeNull()
    })
  })

  describe('find', () => {
    let org: Tenant
    beforeAll(async () => {
      org = await createTenant(t, 'Lister')
      for (let i = 1; i <= 12; i++) {
        await create(org, { name: `Company ${String(i).padStart(2, '0')}`, industry: i % 2 ? 'Odd' : 'Even', size: i <= 3 ? 'Large' : 'Small' })
      }
    })

    it('when no $limit is given, then the envelope has the default 10 and the exact total', async () => {
      const res = await t.http().get('/companies').set(org.key)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 12, limit: 10, skip: 0 })
      expect(res.body.data).toHaveLength(10)
    })

    it('when $limit is above the maximum, then it is capped at 100', async () => {
      const res = await t.http().get('/companies').set(org.key).send({ query: { $limit: 5000 } })
      expect(res.status).toBe(200)
      expect(res.body.limit).toBe(100)
    })

    it('when filters come in the GET body, then they apply with their JSON types', async () => {
      const res = await t.http().get('/companies').set(org.key).send({ query: { industry: 'Odd', $limit: 2, $skip: 1, $sort: { name: -1 } } })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 6, limit: 2, skip: 1 })
      expect(res.body.data.map((c: any) => c.name)).toEqual(['Company 09', 'Company 07'])
    })

    it('when the same filters come in the query string, then the result is the same', async () => {
      const res = await t.http().get('/companies?industry=Odd&$limit=2&$skip=1&$sort[name]=-1').set(org.key)
      expect(res.status).toBe(200)
      expect(res.body.data.map((c: any) => c.name)).toEqual(['Company 09', 'Company 07'])
    })

    it('when sorting on a column with ties, then ties are broken by id (stable pages)', async () => {
      const first = await t.http().get('/companies').set(org.key).send({ query: { $sort: { size: 1 }, $limit: 6 } })
      const second = await t.http().get('/companies').set(org.key).send({ query: { $sort: { size: 1 }, $limit: 6, $skip: 6 } })
      const ids = [...first.body.data, ...second.body.data].map((c: any) => c.id)
      expect(new Set(ids).size).toBe(12)
      const small = first.body.data.filter((c: any) => c.size === 'Small').map((c: any) => c.id)
      expect(small).toEqual([...small].sort((a, b) => a - b))
    })

    it('when created_at ranges are given, then only records inside count', async () => {
      const future = new Date(Date.now() + 60_000).toISOString()
      const res = await t.http().get('/companies').set(org.key).send({ query: { created_at: { $gte: future } } })
      expect(res.body.total).toBe(0)
      const past = await t.http().get('/companies').set(org.key).send({ query: { created_at: { $lte: future } } })
      expect(past.body.total).toBe(12)
    })

    it('when a returned created_at is used as a range bound, then the same record matches it exactly', async () => {
      const one = (await t.http().get('/companies').set(org.key).send({ query: { $limit: 1 } })).body.data[0]
      const lte = await t.http().get('/companies').set(org.key).send({ query: { created_at: { $lte: one.created_at }, $sort: { created_at: -1 }, $limit: 100 } })
      expect(lte.body.data.map((c: any) => c.id)).toContain(one.id)
      const gt = await t.http().get('/companies').set(org.key).send({ query: { created_at: { $gt: one.created_at }, $limit: 100 } })
      expect(gt.body.data.map((c: any) => c.id)).not.toContain(one.id)
    })

    it('when a partial name match is asked with $ilike, then it matches case-insensitively', async () => {
      const res = await t.http().get('/companies').set(org.key).send({ query: { name: { $ilike: '%pany 1%' } } })
      expect(res.body.total).toBe(3)
    })

    it('when a filter names an unknown field, then 400 naming it', async () => {
      const res = await t.http().get('/companies').set(org.key).send({ query: { colour: 'red' } })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ colour: 'is not allowed' })
    })

    it('when a filter uses an unknown operator, then 400', async () => {
      const res = await t.http().get('/companies').set(org.key).send({ query: { name: { $regex: '.*' } } })
      expect(res.status).toBe(400)
      expect(res.body.name).toBe('BadRequest')
    })

    it('when $limit is not a number, then 400', async () => {
      const res = await t.http().get('/companies?$limit=lots').set(org.key)
      expect(res.status).toBe(400)
    })

    it('when fastJoinForCompanyList is set, then creator and owner are attached', async () => {
      const large = await t.http().get('/companies').set(org.key).send({ query: { $limit: 12, fastJoinForCompanyList: true } })
      expect(large.body.data).toHaveLength(12)
      const person = { id: org.user.id, first_name: org.user.first_name, last_name: org.user.last_name }
      for (const row of large.body.data) {
        expect(row.creator).toEqual(person)
        expect(row.owner).toEqual(person)
      }
    })

    it('when fastJoinForCompanyList is absent, then rows carry no joined objects', async () => {
      const res = await t.http().get('/companies').set(org.key)
      expect(res.body.data[0]).not.toHaveProperty('creator')
    })
  })

  describe('search', () => {
    let org: Tenant
    beforeAll(async () => {
      org = await createTenant(t, 'Searcher')
      await create(org, { name: 'Umbrella Corporation', website: 'https://umbrella.example' })
      await create(org, { name: 'Cyberdyne Systems', website: 'https://skynet.example' })
      await create(org, { name: 'Tyrell', website: 'https://replicants.example' })
    })

    const search = (body: Record<string, unknown>) =>
      t.http().post('/companies').set(org.key).set('X-Service-Method', 'search').send(body)

    it('when the term matches part of a name in another case, then the company is found', async () => {
      const res = await search({ searchTerm: 'BRELLA' })
      expect(res.status).toBe(200)
      expect(res.body.data.map((c: any) => c.name)).toEqual(['Umbrella Corporation'])
      expect(res.body.data[0]).toHaveProperty('custom_fields_by_name')
      expect(res.body.data[0]).not.toHaveProperty('custom_fields')
    })

    it('when the term matches the website, then the company is found', async () => {
      const res = await search({ searchTerm: 'skynet' })
      expect(res.body.data.map((c: any) => c.name)).toEqual(['Cyberdyne Systems'])
    })

    it('when nothing matches, then the envelope is empty', async () => {
      const res = await search({ searchTerm: 'zzz' })
      expect(res.body).toEqual({ total: 0, total_capped: false, limit: 10, skip: 0, data: [] })
    })

    it('when the term carries LIKE wildcards, then they match literally', async () => {
      const res = await search({ searchTerm: '%%' })
      expect(res.body.data).toEqual([])
    })

    it('when $limit is given, then at most that many rows come back', async () => {
      const res = await search({ searchTerm: 'e', $limit: 1 }).catch((e) => e)
      expect(res.status).toBe(400)
      const two = await search({ searchTerm: 'ex', $limit: 2 })
      expect(two.body.data).toHaveLength(2)
    })

    it('when searchTerm is shorter than 2 characters or missing, then 400 with errors.searchTerm', async () => {
      const short = await search({ searchTerm: 'a' })
      expect(short.status).toBe(400)
      expect(short.body.errors).toHaveProperty('searchTerm')
      const missing = await search({})
      expect(missing.body.errors).toEqual({ searchTerm: 'is required' })
    })

  })

  describe('authentication', () => {
    it('when no credentials are sent, then 401 NotAuthenticated', async () => {
      const res = await t.http().get('/companies')
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ name: 'NotAuthenticated', message: 'Invalid API key', code: 401, className: 'not-authenticated' })
    })

    it('when the API key is unknown, then 401 Invalid API key', async () => {
      const res = await t.http().get('/companies').set('x-api-key', 'crm_unknown_key')
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ name: 'NotAuthenticated', message: 'Invalid API key', code: 401, className: 'not-authenticated' })
    })
  })
})
