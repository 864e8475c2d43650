import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fillPhoneE164 } from '../../migrations/20261130000200_phone_e164.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/** Contacts' phone numbers in E.164 (docs/contacts.md#phone-numbers), through HTTP. */
describe('contact phone numbers', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => { await t.close() })

  const post = (tenant: Tenant, body: unknown) => t.http().post('/contacts').set(tenant.key).send(body as object)
  const method = (tenant: Tenant, verb: 'post' | 'patch', name: string, body: unknown) =>
    t.http()[verb]('/contacts').set(tenant.key).set('X-Service-Method', name).send(body as object)
  const createContact = async (tenant: Tenant, body: Record<string, unknown>) => {
    const res = await post(tenant, { first_name: 'Ada', ...body })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body
  }
  const read = async (tenant: Tenant, id: number) => (await t.http().get(`/contacts/${id}`).set(tenant.key)).body
  const countOf = async (tenant: Tenant) => Number((await t.db('contacts').where({ organization_id: tenant.organization.id }).count({ n: '*' }))[0].n)

  describe('validation on every write', () => {
    it('when a contact is created with a number that cannot be valid for its region, then 400 naming phone and nothing is written', async () => {
      const before = await countOf(acme)
      for (const [body, message] of [
        [{ phone: '020 7946', phone_country_iso: 'GB' }, 'is not a valid phone number for GB'],
        [{ phone: '555 0100', phone_country_code: '+1' }, 'is not a valid phone number for +1'],
        [{ phone: '+44 20 7946' }, 'is not a valid phone number']
      ] as const) {
        const res = await post(acme, { first_name: 'Bad', ...body })
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, errors: { phone: message } })
      }
      const national = await post(acme, { first_name: 'Bad', phone: '020 7946 0958' })
      expect(national.status).toBe(400)
      expect(national.body.errors.phone).toMatch(/national number without a country: give phone_country_iso/)
      expect(await countOf(acme)).toBe(before)
    })

    it("when a patch makes the number invalid (a new phone, or a new region for the stored one), then 400 naming phone and the contact is unchanged", async () => {
      const contact = await createContact(acme, { phone: '020 7946 0958', phone_country_iso: 'GB' })
      for (const change of [{ phone: '0207' }, { phone_country_iso: 'US' }]) {
        const res = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).send(change)
        expect(res.status, JSON.stringify(change)).toBe(400)
        expect(Object.keys(res.body.errors)).toEqual(['phone'])
      }
      expect(await read(acme, contact.id)).toMatchObject({ phone: '020 7946 0958', phone_country_iso: 'GB', phone_e164: '+442079460958' })
      const moved = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).send({ phone: '(212) 555-0100', phone_country_iso: 'US' })
      expect(moved.body.phone_e164).toBe('+12125550100')
      const cleared = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).send({ phone: null })
      expect(cleared.body).toMatchObject({ phone: null, phone_e164: null })
    })

    it('when a batch create, batch-update or upsert holds an invalid number, then 400 names the record and phone, and nothing is written', async () => {
      const contact = await createContact(acme, { first_name: 'Batch', phone: '020 7946 0958', phone_country_iso: 'GB' })
      const before = await countOf(acme)
      const created = await post(acme, [{ first_name: 'Ok', phone: '+44 20 7946 0958' }, { first_name: 'Bad', phone: '12', phone_country_iso: 'GB' }])
      expect(created.status).toBe(400)
      expect(created.body.errors).toEqual({ 1: { phone: 'is not a valid phone number for GB' } })
      const updated = await method(acme, 'patch', 'batch-update', { records: [{ id: contact.id, phone: '0' }] })
      expect(updated.status).toBe(400)
      expect(updated.body.errors).toEqual({ 0: { phone: 'is not a valid phone number for GB' } })
      const upserted = await method(acme, 'post', 'upsert', { idProperty: 'phone', records: [{ first_name: 'Bad', phone: '+1 555 0100' }] })
      expect(upserted.status).toBe(400)
      expect(upserted.body.errors).toEqual({ 0: { phone: 'is not a valid phone number' } })
      expect(await countOf(acme)).toBe(before)
      expect(await read(acme, contact.id)).toMatchObject({ first_name: 'Batch', phone: '020 7946 0958' })
    })
  })

  describe('matching by E.164', () => {
    it('when contacts are upserted by phone, then every writing of a stored number matches it, and never another organization\'s', async () => {
      const ours = await createContact(acme, { first_name: 'Upsert', phone: '020 7946 0101', phone_country_iso: 'GB' })
      const theirs = await createContact(globex, { first_name: 'Theirs', phone: '020 7946 0202', phone_country_iso: 'GB' })
      for (const record of [
        { phone: '+44 20 7946 0101' },
        { phone: '0044 (0)20 7946-0101', phone_country_iso: 'GB' },
        { phone: '2079460101', phone_country_code: '+44' }
      ]) {
        const res = await method(acme, 'post', 'upsert', { idProperty: 'phone', records: [{ first_name: 'Upserted', ...record }] })
        expect(res.status, JSON.stringify(res.body)).toBe(201)
        expect(res.body).toMatchObject({ created: 0, updated: 1 })
        expect(res.body.data[0]).toMatchObject({ id: ours.id, phone: record.phone, phone_e164: '+442079460101' })
      }
      const elsewhere = await method(acme, 'post', 'upsert', { idProperty: 'phone', records: [{ first_name: 'New', phone: '+44 20 7946 0202' }] })
      expect(elsewhere.body).toMatchObject({ created: 1, updated: 0 })
      expect(elsewhere.body.data[0].id).not.toBe(theirs.id)
      expect(await read(globex, theirs.id)).toMatchObject({ first_name: 'Theirs', phone: '020 7946 0202' })
    })

    it('when two contacts hold one number written differently, then find-duplicates groups them under its E.164 form', async () => {
      const tenant = await createTenant(t, 'Duplicates')
      const a = await createContact(tenant, { phone: '020 7946 0958', phone_country_iso: 'GB' })
      const b = await createContact(tenant, { phone: '+44 (0)20 7946 0958' })
      await createContact(tenant, { phone: '020 7946 0959', phone_country_iso: 'GB' })
      const res = await method(tenant, 'post', 'find-duplicates', { searchIn: 'phone' })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.groups).toEqual([{ value: '+442079460958', count: 2, contact_ids: [a.id, b.id] }])
    })
  })

  describe('phone search', () => {
    let tenant: Tenant
    let ada: any
    beforeAll(async () => {
      tenant = await createTenant(t, 'Search')
      ada = await createContact(tenant, { last_name: 'Lovelace', phone: '020 7946 0958', phone_country_code: '+44', phone_country_iso: 'GB' })
      await createContact(tenant, { first_name: 'Zoë', phone: '(212) 555-0147', phone_country_code: '+1', phone_country_iso: 'US' })
      // The same number in another organization is never found.
      await createContact(globex, { last_name: 'Lovelace', phone: '+44 20 7946 0958' })
    })
    const search = (searchTerm: string, region = { phone_country_code: '+44', phone_country_iso: 'GB' }) =>
      method(tenant, 'post', 'search', { searchIn: 'phone', searchTerm, ...region })

    it.each([
      '020 7946 0958', '02079460958', '(020) 7946-0958', '+44 20 7946 0958', '+442079460958', '+44 (0)20 7946 0958', '0044 20 7946 0958',
      '20 7946 0958', '020 7946', '+44 20 79', '7946 0958', '0958'
    ])('when the term is %j, then the contact saved as 020 7946 0958 is found, alone', async (term) => {
      const res = await search(term)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((row: any) => row.id)).toEqual([ada.id])
      expect(res.body.total).toBe(1)
    })

    it('when the term is in another country, or digits the number does not hold, then nothing from this region', async () => {
      expect((await search('0958', { phone_country_code: '+1', phone_country_iso: 'US' })).body.total).toBe(0)
      expect((await search('020 7946 1')).body.total).toBe(0)
      // The country code itself is not part of the number searched.
      expect((await search('44')).body.total).toBe(0)
      const international = await search('+1 212 555', { phone_country_code: '+44', phone_country_iso: 'GB' })
      expect(international.body.data.map((row: any) => row.first_name)).toEqual(['Zoë'])
    })

    it('when the term has fewer than two digits of the number, then 400 naming searchTerm', async () => {
      for (const term of ['0 ', '+44']) {
        const res = await search(term)
        expect(res.status, term).toBe(400)
        expect(res.body.errors.searchTerm).toBe('must contain at least 2 digits of the number')
      }
    })
  })

  describe('numbers stored before validation', () => {
    /** Contacts written as earlier versions stored them: a phone as typed, no E.164 form. */
    const insertLegacy = (tenant: Tenant, rows: Record<string, unknown>[]) =>
      t.db('contacts').insert(rows.map((row) => ({ organization_id: tenant.organization.id, first_name: 'Legacy', ...row }))).returning('id')

    it('when the backfill of the migration runs, then parsable numbers get their E.164 form in chunks and the others keep their text with null', async () => {
      const tenant = await createTenant(t, 'Legacy')
      await t.db.raw(
        `INSERT INTO contacts (organization_id, first_name, phone, phone_country_iso)
         SELECT ?, 'Bulk', '020 7946 ' || lpad(i::text, 4, '0'), 'GB' FROM generate_series(1, 1500) AS i`,
        [tenant.organization.id]
      )
      const [national, international, unparsed] = await insertLegacy(tenant, [
        { phone: '20 7946 0958', phone_country_code: '+44' },
        { phone: '+1 212 555 0100' },
        { phone: '12 34', phone_country_iso: 'GB' }
      ])
      expect(await fillPhoneE164(t.db)).toBeGreaterThanOrEqual(1502)
      const stored = await t.db('contacts').where({ organization_id: tenant.organization.id })
      const byId = new Map(stored.map((row: any) => [row.id, row]))
      expect(byId.get(national.id)).toMatchObject({ phone: '20 7946 0958', phone_e164: '+442079460958' })
      expect(byId.get(international.id)).toMatchObject({ phone: '+1 212 555 0100', phone_e164: '+12125550100' })
      expect(byId.get(unparsed.id)).toMatchObject({ phone: '12 34', phone_e164: null })
      const bulk = stored.filter((row: any) => row.first_name === 'Bulk')
      expect(new Set(bulk.map((row: any) => row.phone_e164)).size).toBe(1500)
      expect(bulk.every((row: any) => /^\+4420794\d{5}$/.test(row.phone_e164))).toBe(true)
    })

    it('when the list is filtered by phone_e164 null and a phone, then only the numbers to fix come back, and only this organization\'s', async () => {
      const tenant = await createTenant(t, 'Fix')
      await createContact(tenant, { first_name: 'Valid', phone: '+44 20 7946 0958' })
      await createContact(tenant, { first_name: 'NoPhone' })
      const [legacy] = await insertLegacy(tenant, [{ phone: '12 34', phone_country_iso: 'GB' }])
      await insertLegacy(globex, [{ phone: '56 78' }])
      const res = await t.http().get('/contacts').set(tenant.key).send({ query: { phone_e164: null, phone: { $ne: null } } })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((row: any) => [row.id, row.phone, row.phone_e164])).toEqual([[legacy.id, '12 34', null]])
      const fixed = await t.http().patch(`/contacts/${legacy.id}`).set(tenant.key).send({ phone: '020 7946 0000' })
      expect(fixed.body.phone_e164).toBe('+442079460000')
      expect((await t.http().get('/contacts').set(tenant.key).send({ query: { phone_e164: null, phone: { $ne: null } } })).body.total).toBe(0)
    })
  })
})
