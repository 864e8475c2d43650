import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

describe('contacts', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant
  let initech: { id: number; name: string }

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
    initech = (await t.http().post('/companies').set(acme.key).send({ name: 'Initech' })).body
  })
  afterAll(async () => { await t.close() })

  const createContact = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/contacts').set(tenant.key).send(body)
  const search = (tenant: Tenant, body: Record<string, unknown>) =>
    t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'search').send(body)

  describe('create, read, patch, delete', () => {
    it('when a contact is created with every field, then it is returned and read back as stored', async () => {
      const created = await createContact(acme, {
        first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test', phone: '+44 20 7946 0958',
        phone_country_code: '+44', phone_country_iso: 'gb', company_id: initech.id, owned_by_user_id: acme.user.id
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, first_name: 'Ada', last_name: 'Lovelace',
        email: 'ada@example.test', phone: '+44 20 7946 0958', phone_country_code: '+44', phone_country_iso: 'GB', phone_e164: '+442079460958',
        company_id: initech.id, owned_by_user_id: acme.user.id, created_by_user_id: acme.user.id,
        channel_whatsapp_wa_id: null, channel_instagram_user_id: null, channel_messenger_user_id: null, channel_whatsapp_user_id: null, system_type: 'contact', avatar_url: null,
        custom_fields_by_name: {},
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), updated_at: expect.any(String), external_id: null, deleted_at: null
      })
      const read = await t.http().get(`/contacts/${created.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual(created.body)
    })

    it('when only first_name is given, then the optional fields are null', async () => {
      const created = await createContact(acme, { first_name: 'Solo' })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ last_name: null, email: null, phone: null, company_id: null, owned_by_user_id: null, system_type: 'contact' })
    })

    it('when first_name is missing or blank, then 400 with errors.first_name', async () => {
      for (const body of [{ last_name: 'Nobody' }, { first_name: '' }, { first_name: '   ' }]) {
        const res = await createContact(acme, body)
        expect(res.status).toBe(400)
        expect(res.body.errors.first_name).toBeTruthy()
      }
    })

    it("when a contact's e-mail is invalid, then 400 with errors.email set to a message", async () => {
      const res = await createContact(acme, { first_name: 'Bad', email: 'not-an-email' })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
      expect(typeof res.body.errors.email).toBe('string')
      const created = await createContact(acme, { first_name: 'Good', email: 'good@example.test' })
      const patched = await t.http().patch(`/contacts/${created.body.id}`).set(acme.key).send({ email: 'still bad' })
      expect(patched.status).toBe(400)
      expect(patched.body.errors.email).toBeTruthy()
    })

    it('when phone_country_code or phone_country_iso is malformed, then 400 naming the field', async () => {
      for (const code of ['44', '+', '+12345', '+4a']) {
        const res = await createContact(acme, { first_name: 'P', phone: '123', phone_country_code: code })
        expect(res.status, code).toBe(400)
        expect(res.body.errors.phone_country_code).toBeTruthy()
      }
      for (const iso of ['GBR', 'G', '12']) {
        const res = await createContact(acme, { first_name: 'P', phone_country_iso: iso })
        expect(res.status, iso).toBe(400)
        expect(res.body.errors.phone_country_iso).toBeTruthy()
      }
      const letters = await createContact(acme, { first_name: 'P', phone: 'call me' })
      expect(letters.status).toBe(400)
      expect(letters.body.errors.phone).toBeTruthy()
    })

    it('when fields the service owns are sent, then 400', async () => {
      for (const body of [{ id: 5 }, { created_by_user_id: acme.user.id }, { system_type: 'lead' }, { created_at: new Date().toISOString() }, { phone_e164: '+442079460958' }]) {
        const res = await createContact(acme, { first_name: 'X', ...body })
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(Object.keys(res.body.errors)).toEqual([Object.keys(body)[0]])
      }
    })

    it('when owned_by_user_id is not a member of the organization, then 400 with errors.owned_by_user_id', async () => {
      const res = await createContact(acme, { first_name: 'X', owned_by_user_id: other.user.id })
      expect(res.status).toBe(400)
      expect(res.body.errors.owned_by_user_id).toBeTruthy()
      const member = await addMember(t, acme)
      const ok = await createContact(acme, { first_name: 'X', owned_by_user_id: member.user.id })
      expect(ok.status).toBe(201)
      expect(ok.body.owned_by_user_id).toBe(member.user.id)
    })

    it('when a contact is patched, then every creatable field changes and is read back', async () => {
      const created = await createContact(acme, { first_name: 'Old', email: 'old@example.test' })
      const changes = {
        first_name: 'New', last_name: 'Name', email: 'new@example.test', phone: '(212) 555-0100', phone_country_code: '+1',
        phone_country_iso: 'us', company_id: initech.id, owned_by_user_id: acme.user.id, channel_whatsapp_wa_id: 'wa-1',
        channel_instagram_user_id: 'ig-1', channel_messenger_user_id: 'psid-1', channel_whatsapp_user_id: 'US.1234', avatar_url: 'https://cdn.example.test/a.png'
      }
      const patched = await t.http().patch(`/contacts/${created.body.id}`).set(acme.key).send(changes)
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      const read = await t.http().get(`/contacts/${created.body.id}`).set(acme.key)
      expect(read.body).toMatchObject({ ...changes, phone_country_iso: 'US', phone_e164: '+12125550100', system_type: 'contact' })
      expect(new Date(read.body.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(created.body.updated_at).getTime())
      const cleared = await t.http().patch(`/contacts/${created.body.id}?fastJoinForContactList=true`).set(acme.key).send({ company_id: null, avatar_url: null })
      expect(cleared.status).toBe(200)
      expect(cleared.body).toMatchObject({ company_id: null, avatar_url: null })
    })

    it('when a contact is deleted, then it is returned with deleted_at, and disappears from reads and lists', async () => {
      const tenant = await createTenant(t, 'Deleter')
      const created = await createContact(tenant, { first_name: 'Gone' })
      const removed = await t.http().delete(`/contacts/${created.body.id}`).set(tenant.key)
      expect(removed.status).toBe(200)
      expect(removed.body.id).toBe(created.body.id)
      expect(removed.body.deleted_at).toMatch(/Z$/)
      expect(removed.body.updated_at).toBe(removed.body.deleted_at)
      const read = await t.http().get(`/contacts/${created.body.id}`).set(tenant.key)
      expect(read.status).toBe(404)
      expect(read.body.message).toBe(`No record found for id '${created.body.id}'`)
      const list = await t.http().get('/contacts').set(tenant.key)
      expect(list.body.total).toBe(0)
      expect((await t.http().delete(`/contacts/${created.body.id}`).set(tenant.key)).status).toBe(404)
      const row = await t.db('contacts').where({ organization_id: tenant.organization.id, id: created.body.id }).first()
      expect(row.deleted_at).not.toBeNull()
    })

    it('when the company of a contact is deleted, then the contact stays and its company join shows null', async () => {
      const company = await t.http().post('/companies').set(acme.key).send({ name: 'Doomed Ltd' })
      const created = await createContact(acme, { first_name: 'Survivor', company_id: company.body.id })
      const before = await t.http().get(`/contacts/${created.body.id}?fastJoinForContactList=true`).set(acme.key)
      expect(before.body.company).toEqual({ id: company.body.id, name: 'Doomed Ltd' })
      expect((await t.http().delete(`/companies/${company.body.id}`).set(acme.key)).status).toBe(200)
      const after = await t.http().get('/contacts').set(acme.key).send({ query: { company_id: company.body.id, fastJoinForContactList: true } })
      expect(after.body.total).toBe(1)
      expect(after.body.data[0]).toMatchObject({ id: created.body.id, company_id: company.body.id, company: null, deleted_at: null })
      const patched = await t.http().patch(`/contacts/${created.body.id}`).set(acme.key).send({ company_id: company.body.id })
      expect(patched.status).toBe(400)
      expect(patched.body.errors.company_id).toBeTruthy()
    })
  })

  describe('lists', () => {
    let tenant: Tenant
    let member: Awaited<ReturnType<typeof addMember>>
    let company: { id: number }
    beforeAll(async () => {
      tenant = await createTenant(t, 'Lists')
      member = await addMember(t, tenant)
      company = (await t.http().post('/companies').set(tenant.key).send({ name: 'Globex' })).body
      const people = [
        ['Alan', 'Turing', 'alan@example.test'], ['Grace', 'Hopper', 'grace@example.test'], ['Ada', 'Byron', 'ada@example.test'],
        ['Alan', 'Kay', 'kay@example.test'], ['Edsger', 'Dijkstra', 'ed@example.test'], ['Barbara', 'Liskov', 'barbara@example.test'],
        ['Ken', 'Thompson', 'ken@example.test'], ['Dennis', 'Ritchie', 'dmr@example.test'], ['Donald', 'Knuth', 'knuth@example.test'],
        ['Margaret', 'Hamilton', 'mh@example.test'], ['John', 'McCarthy', 'jmc@example.test'], ['Frances', 'Allen', 'fa@example.test']
      ]
      for (const [i, [first_name, last_name, email]] of people.entries()) {
        const res = await createContact(tenant, {
          first_name, last_name, email,
          company_id: i % 3 === 0 ? company.id : undefined,
          owned_by_user_id: i % 2 === 0 ? member.user.id : tenant.user.id
        })
        expect(res.status).toBe(201)
      }
    })

    const list = (query: Record<string, unknown>) => t.http().get('/contacts').set(tenant.key).send({ query })

    it('when no $limit is given, then 10 per page with the total', async () => {
      const res = await list({})
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 12, limit: 10, skip: 0 })
      expect(res.body.data).toHaveLength(10)
    })

    it('when filtering by first_name, last_name, email, company_id and owned_by_user_id, then only matches come back', async () => {
      expect((await list({ first_name: 'Alan' })).body.data.map((c: any) => c.last_name).sort()).toEqual(['Kay', 'Turing'])
      expect((await list({ last_name: 'Hopper' })).body.total).toBe(1)
      expect((await list({ email: 'knuth@example.test' })).body.data[0].first_name).toBe('Donald')
      expect((await list({ email: { $ilike: '%EXAMPLE.test' } })).body.total).toBe(12)
      const byCompany = await list({ company_id: company.id })
      expect(byCompany.body.total).toBe(4)
      expect(byCompany.body.data.every((c: any) => c.company_id === company.id)).toBe(true)
      const byOwner = await list({ owned_by_user_id: member.user.id, $limit: 50 })
      expect(byOwner.body.total).toBe(6)
      expect(byOwner.body.data.every((c: any) => c.owned_by_user_id === member.user.id)).toBe(true)
    })

    it('when filtering by a created_at range and sorting, then the range and order hold across $skip', async () => {
      const all = await list({ $sort: { created_at: 1 }, $limit: 50 })
      const from = all.body.data[3].created_at
      // The wire shows milliseconds while Postgres keeps microseconds: end the range a millisecond later.
      const to = new Date(Date.parse(all.body.data[8].created_at) + 1).toISOString()
      const ranged = await list({ created_at: { $gte: from, $lt: to }, $sort: { created_at: 1 }, $limit: 50 })
      expect(ranged.body.data.every((c: any) => c.created_at >= from && c.created_at < to)).toBe(true)
      expect(ranged.body.data.map((c: any) => c.id)).toEqual(all.body.data.slice(3, 9).map((c: any) => c.id))
      const byName = await list({ $sort: { last_name: -1 }, $limit: 3, $skip: 2 })
      expect(byName.body).toMatchObject({ total: 12, limit: 3, skip: 2 })
      expect(byName.body.data.map((c: any) => c.last_name)).toEqual(['Ritchie', 'McCarthy', 'Liskov'])
      const queryString = await t.http().get('/contacts?first_name=Alan&$sort[last_name]=1').set(tenant.key)
      expect(queryString.body.data.map((c: any) => c.last_name)).toEqual(['Kay', 'Turing'])
    })

    it('when a filter or operator is unknown, then 400', async () => {
      expect((await list({ phone_normalized: '1' })).status).toBe(400)
      expect((await list({ first_name: { $regex: 'x' } })).status).toBe(400)
    })

    it('when fastJoinForContactList is true, then company {id, name} and owner {id, first_name, last_name} are attached', async () => {
      const res = await list({ fastJoinForContactList: true, company_id: company.id, $sort: { id: 1 } })
      expect(res.body.data[0].company).toEqual({ id: company.id, name: 'Globex' })
      expect(res.body.data[0].owner).toEqual({ id: member.user.id, first_name: 'Grace', last_name: 'Hopper' })
      const plain = await list({ company_id: company.id })
      expect(plain.body.data[0].company).toBeUndefined()
      const withoutCompany = await list({ fastJoinForContactList: true, last_name: 'Hopper' })
      expect(withoutCompany.body.data[0].company).toBeNull()
    })

    it('when the joined list is read, then the contacts with a company carry it and the others carry null', async () => {
      const page = await list({ fastJoinForContactList: true, $limit: 12 })
      expect(page.body.data).toHaveLength(12)
      expect(page.body.data.filter((c: any) => c.company).length).toBe(4)
      expect(page.body.data.every((c: any) => c.company === null || c.company.id === c.company_id)).toBe(true)
    })
  })

  describe('search (X-Service-Method: search)', () => {
    let tenant: Tenant
    beforeAll(async () => {
      tenant = await createTenant(t, 'Search')
      const people = [
        { first_name: 'Ada', last_name: 'Lovelace', email: 'Ada.Lovelace@Analytical.example', phone: '+44 20 7946 0958', phone_country_code: '+44', phone_country_iso: 'GB' },
        { first_name: 'Zoë', last_name: 'Ångström', email: 'zoe@physics.example', phone: '(212) 555-0147', phone_country_code: '+1', phone_country_iso: 'US' },
        { first_name: 'Charles', last_name: 'Babbage', email: 'charles@engines.example', phone: '020 7946 1111', phone_country_code: '+44', phone_country_iso: 'GB' },
        { first_name: 'José', last_name: null, email: null, phone: '+1 416 555 0199', phone_country_code: '+1', phone_country_iso: 'CA' }
      ]
      for (const person of people) expect((await createContact(tenant, person)).status).toBe(201)
      // Another organization's look-alike never leaks into the results.
      await createContact(other, { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@other.example', phone: '+44 20 7946 0958', phone_country_code: '+44', phone_country_iso: 'GB' })
    })

    const names = (res: any) => res.body.data.map((c: any) => `${c.first_name} ${c.last_name ?? ''}`.trim())

    it("when searching names, then first, last and full names match case- and accent-insensitively ('ada love' finds Ada Lovelace)", async () => {
      const full = await search(tenant, { searchTerm: 'ada love', searchIn: 'name' })
      expect(full.status, JSON.stringify(full.body)).toBe(200)
      expect(full.body).toMatchObject({ total: 1, limit: 10, skip: 0 })
      expect(names(full)).toEqual(['Ada Lovelace'])
      expect(full.body.data[0].custom_fields_by_name).toEqual({})
      expect(full.body.data[0].phone_e164).toBe('+442079460958')
      expect(names(await search(tenant, { searchTerm: 'LOVELACE', searchIn: 'name' }))).toEqual(['Ada Lovelace'])
      expect(names(await search(tenant, { searchTerm: 'zoe lovelace', searchIn: 'name' }))).toEqual([])
      expect(names(await search(tenant, { searchTerm: 'zoe angstrom', searchIn: 'name' }))).toEqual(['Zoë Ångström'])
      expect(names(await search(tenant, { searchTerm: 'ÅNGS', searchIn: 'name' }))).toEqual(['Zoë Ångström'])
      expect(names(await search(tenant, { searchTerm: 'jose', searchIn: 'name' }))).toEqual(['José'])
      expect(names(await search(tenant, { searchTerm: 'bab', searchIn: 'name' }))).toEqual(['Charles Babbage'])
    })

    it('when a name search matches nothing, or only in another organization, then an empty envelope', async () => {
      const res = await search(tenant, { searchTerm: 'Hopper', searchIn: 'name' })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ total: 0, total_capped: false, limit: 10, skip: 0, data: [] })
      const wildcard = await search(tenant, { searchTerm: '%%', searchIn: 'name' })
      expect(wildcard.body.total).toBe(0)
    })

    it('when searching e-mails, then a case-insensitive partial match; otherwise nothing', async () => {
      const res = await search(tenant, { searchTerm: 'lovelace@ANALYTICAL', searchIn: 'email' })
      expect(names(res)).toEqual(['Ada Lovelace'])
      expect(res.body.data[0].email).toBe('Ada.Lovelace@Analytical.example')
      expect((await search(tenant, { searchTerm: '.example', searchIn: 'email' })).body.total).toBe(3)
      expect((await search(tenant, { searchTerm: 'nobody@', searchIn: 'email' })).body.total).toBe(0)
      expect((await search(tenant, { searchTerm: 'Ada', searchIn: 'email' })).body.data.map((c: any) => c.email)).toEqual(['Ada.Lovelace@Analytical.example'])
    })

    it('when searching phones, then the national digits match partially, however written, within the calling code only', async () => {
      const gb = await search(tenant, { searchTerm: '0958', searchIn: 'phone', phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(names(gb)).toEqual(['Ada Lovelace'])
      const international = await search(tenant, { searchTerm: '+44 20 7946 09', searchIn: 'phone', phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(names(international)).toEqual(['Ada Lovelace'])
      const national = await search(tenant, { searchTerm: '020 7946', searchIn: 'phone', phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(names(national)).toEqual(['Charles Babbage', 'Ada Lovelace']) // newest first
      const us = await search(tenant, { searchTerm: '555-01', searchIn: 'phone', phone_country_code: '+1', phone_country_iso: 'US' })
      expect(names(us).sort()).toEqual(['José', 'Zoë Ångström'])
      const otherCountry = await search(tenant, { searchTerm: '0958', searchIn: 'phone', phone_country_code: '+1', phone_country_iso: 'US' })
      expect(otherCountry.body.total).toBe(0)
      const noDigitsMatch = await search(tenant, { searchTerm: '123456', searchIn: 'phone', phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(noDigitsMatch.body.total).toBe(0)
    })

    it("when a contact's phone changes, then phone search follows it", async () => {
      const created = await createContact(tenant, { first_name: 'Mover', phone: '111 222', phone_country_code: '+49', phone_country_iso: 'DE' })
      await t.http().patch(`/contacts/${created.body.id}`).set(tenant.key).send({ phone: '+49 333 444' })
      const find = (term: string) => search(tenant, { searchTerm: term, searchIn: 'phone', phone_country_code: '+49', phone_country_iso: 'DE' })
      expect((await find('111222')).body.total).toBe(0)
      expect(names(await find('333444'))).toEqual(['Mover'])
      await t.http().delete(`/contacts/${created.body.id}`).set(tenant.key)
      expect((await find('333444')).body.total).toBe(0)
    })

    it('when searching phones without phone_country_iso and phone_country_code, then 400 naming them', async () => {
      const res = await search(tenant, { searchTerm: '7946', searchIn: 'phone' })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors).sort()).toEqual(['phone_country_code', 'phone_country_iso'])
      const onlyIso = await search(tenant, { searchTerm: '7946', searchIn: 'phone', phone_country_iso: 'GB' })
      expect(onlyIso.status).toBe(400)
      expect(Object.keys(onlyIso.body.errors)).toEqual(['phone_country_code'])
      const letters = await search(tenant, { searchTerm: 'ab', searchIn: 'phone', phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(letters.status).toBe(400)
      expect(letters.body.errors.searchTerm).toBeTruthy()
    })

    it('when searchTerm is shorter than 2 characters or searchIn is missing or unknown, then 400 naming the field', async () => {
      const short = await search(tenant, { searchTerm: 'a', searchIn: 'name' })
      expect(short.status).toBe(400)
      expect(short.body.errors.searchTerm).toBeTruthy()
      const missing = await search(tenant, { searchTerm: 'ada' })
      expect(missing.status).toBe(400)
      expect(missing.body.errors).toEqual({ searchIn: 'is required' })
      const unknown = await search(tenant, { searchTerm: 'ada', searchIn: 'notes' })
      expect(unknown.status).toBe(400)
      expect(unknown.body.errors.searchIn).toBe('must be one of: name, email, phone')
      const noTerm = await search(tenant, { searchIn: 'name' })
      expect(noTerm.status).toBe(400)
      expect(noTerm.body.errors.searchTerm).toBeTruthy()
    })

    it('when $limit and $skip are given, then the page follows them and total counts every match', async () => {
      const res = await search(tenant, { searchTerm: 'example', searchIn: 'email', $limit: 2, $skip: 1 })
      expect(res.body).toMatchObject({ total: 3, limit: 2, skip: 1 })
      expect(res.body.data).toHaveLength(2)
      const pastTheEnd = await search(tenant, { searchTerm: 'example', searchIn: 'email', $skip: 50 })
      expect(pastTheEnd.body).toMatchObject({ total: 3, skip: 50, data: [] })
      expect(pastTheEnd.body.data[0]).toBeUndefined()
      const first = await search(tenant, { searchTerm: 'example', searchIn: 'email' })
      expect(first.body.data[0]).not.toHaveProperty('search_total')
      const tooMany = await search(tenant, { searchTerm: 'example', searchIn: 'email', $limit: 1000 })
      expect(tooMany.status).toBe(400)
    })

    it('when the caller has no key, then 401', async () => {
      const res = await t.http().post('/contacts').set('X-Service-Method', 'search').send({ searchTerm: 'ada', searchIn: 'name' })
      expect(res.status).toBe(401)
    })
  })

  describe('custom fields on contacts', () => {
    let tenant: Tenant
    beforeAll(async () => {
      tenant = await createTenant(t, 'Custom')
      for (const field of [
        { key: 'tier', name: 'Tier', field_type: 'select', options: ['gold', 'silver'] },
        { key: 'score', name: 'Score', field_type: 'number' },
        { key: 'vip', name: 'VIP', field_type: 'boolean' }
      ]) {
        expect((await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'contact', ...field })).status).toBe(201)
      }
      await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'company', key: 'size_band', name: 'Size band', field_type: 'text' })
    })

    it('when values are sent by name, then they round-trip, merge on patch, and null clears', async () => {
      const created = await createContact(tenant, { first_name: 'Val', custom_fields_by_name: { Tier: 'gold', Score: 7 } })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body.custom_fields_by_name).toEqual({ Tier: 'gold', Score: 7 })
      const patched = await t.http().patch(`/contacts/${created.body.id}`).set(tenant.key).send({ custom_fields_by_name: { VIP: true, Score: null } })
      expect(patched.body.custom_fields_by_name).toEqual({ Tier: 'gold', VIP: true })
      const read = await t.http().get(`/contacts/${created.body.id}`).set(tenant.key)
      expect(read.body.custom_fields_by_name).toEqual({ Tier: 'gold', VIP: true })
      const listed = await t.http().get('/contacts').set(tenant.key).send({ query: { first_name: 'Val' } })
      expect(listed.body.data[0].custom_fields_by_name).toEqual({ Tier: 'gold', VIP: true })
      const found = await search(tenant, { searchTerm: 'val', searchIn: 'name' })
      expect(found.body.data[0].custom_fields_by_name).toEqual({ Tier: 'gold', VIP: true })
    })

    it('when a value has the wrong type, an option is not in the list, or the name is unknown, then 400 naming each field', async () => {
      const res = await createContact(tenant, { first_name: 'Bad', custom_fields_by_name: { Tier: 'bronze', Score: 'ten', VIP: 1, 'Size band': 'L' } })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({
        'custom_fields_by_name.Tier': 'must be one of: gold, silver',
        'custom_fields_by_name.Score': 'must be a number',
        'custom_fields_by_name.VIP': 'must be true or false',
        'custom_fields_by_name.Size band': expect.stringMatching(/not a custom field/)
      })
      expect((await t.http().get('/contacts').set(tenant.key).send({ query: { first_name: 'Bad' } })).body.total).toBe(0)
    })
  })

  describe('across organizations', () => {
    let mine: { id: number }
    beforeAll(async () => {
      mine = (await createContact(acme, { first_name: 'Private', last_name: 'Person', email: 'private@acme.example' })).body
    })

    it("when another organization's contact is addressed by id, then 404 and it is unchanged", async () => {
      const read = await t.http().get(`/contacts/${mine.id}`).set(other.key)
      expect(read.status).toBe(404)
      expect(read.body.message).toBe(`No record found for id '${mine.id}'`)
      expect((await t.http().patch(`/contacts/${mine.id}`).set(other.key).send({ first_name: 'Stolen' })).status).toBe(404)
      expect((await t.http().delete(`/contacts/${mine.id}`).set(other.key)).status).toBe(404)
      const still = await t.http().get(`/contacts/${mine.id}`).set(acme.key)
      expect(still.body).toMatchObject({ first_name: 'Private', deleted_at: null })
    })

    it('when another organization is named by organization_id, then 403 for list, create and search', async () => {
      const list = await t.http().get('/contacts').set(other.key).send({ query: { organization_id: acme.organization.id } })
      expect(list.status).toBe(403)
      expect(list.body.name).toBe('Forbidden')
      expect((await createContact(other, { organization_id: acme.organization.id, first_name: 'Intruder' })).status).toBe(403)
      expect((await search(other, { organization_id: acme.organization.id, searchTerm: 'private', searchIn: 'name' })).status).toBe(403)
      const bearer = await t.http().get('/contacts').set(other.bearer).send({ query: { organization_id: acme.organization.id } })
      expect(bearer.status).toBe(403)
    })

    it("when a body references another organization's company, then 400 with errors.company_id", async () => {
      const theirs = await t.http().post('/companies').set(other.key).send({ name: 'Elsewhere' })
      const res = await createContact(acme, { first_name: 'Linked', company_id: theirs.body.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ company_id: expect.any(String) })
      const patch = await t.http().patch(`/contacts/${mine.id}`).set(acme.key).send({ company_id: theirs.body.id })
      expect(patch.status).toBe(400)
      expect(patch.body.errors.company_id).toBeTruthy()
      expect((await t.http().get(`/contacts/${mine.id}`).set(acme.key)).body.company_id).toBeNull()
    })

    it("when another organization searches, then it never sees this organization's contacts", async () => {
      const res = await search(other, { searchTerm: 'private', searchIn: 'name' })
      expect(res.body.total).toBe(0)
    })
  })
})
