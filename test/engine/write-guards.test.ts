import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * A single create or patch checks its references (and, for a create without custom values, that
 * the organization requires none) inside its own statement: the same answers as a check by query,
 * without the query. These tests hold the answers; test/performance/statement-counts.test.ts
 * counts the statements.
 */
describe('checks inside the write statement', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let acmeCompany: number
  let globexCompany: number
  let deletedCompany: number

  const contactsOf = async (tenant: Tenant) =>
    Number((await t.db('contacts').where({ organization_id: tenant.organization.id }).count({ n: '*' }))[0].n)

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    const company = async (tenant: Tenant, name: string) =>
      (await t.http().post('/companies').set('x-api-key', tenant.apiKey).send({ organization_id: tenant.organization.id, name }).expect(201)).body.id as number
    acmeCompany = await company(acme, 'Acme Widgets')
    globexCompany = await company(globex, 'Globex Widgets')
    deletedCompany = await company(acme, 'Gone Ltd')
    await t.http().delete(`/companies/${deletedCompany}`).set('x-api-key', acme.apiKey).expect(200)
  })
  afterAll(async () => {
    await t?.close()
  })

  it('when a contact is created with a live company of its organization, a member owner and no custom values, then it is stored and answered with them', async () => {
    const result = await t.http().post('/contacts').set('x-api-key', acme.apiKey)
      .send({ organization_id: acme.organization.id, first_name: 'Ada', company_id: acmeCompany, owned_by_user_id: acme.user.id })
    expect(result.status, JSON.stringify(result.body)).toBe(201)
    expect(result.body).toMatchObject({ first_name: 'Ada', company_id: acmeCompany, owned_by_user_id: acme.user.id, custom_fields_by_name: {} })
    expect(await t.db('contacts').where({ id: result.body.id }).first()).toMatchObject({ first_name: 'Ada', company_id: acmeCompany, owned_by_user_id: acme.user.id })
  })

  it('when the company belongs to another organization, is deleted, or the owner is not a member, then 400 names the field and nothing is written', async () => {
    const outsider = await createTenant(t, 'Initech')
    const before = await contactsOf(acme)
    for (const [field, value, message] of [
      ['company_id', globexCompany, 'must be a company of this organization'],
      ['company_id', deletedCompany, 'must be a company of this organization'],
      ['owned_by_user_id', outsider.user.id, 'must be a member of this organization']
    ] as const) {
      const answer = await t.http().post('/contacts').set('x-api-key', acme.apiKey)
        .send({ organization_id: acme.organization.id, first_name: 'Eve', [field]: value })
      expect(answer.status, JSON.stringify(answer.body)).toBe(400)
      expect(answer.body.errors).toEqual({ [field]: message })
    }
    expect(await contactsOf(acme)).toBe(before)
  })

  it('when the organization requires a custom field and the create sends no values, then 400 names the field and nothing is written', async () => {
    const tenant = await createTenant(t, 'Required Fields')
    await t.http().post('/custom-fields').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, entity_type: 'contact', name: 'Tier', key: 'tier', field_type: 'text', required: true })
      .expect(201)
    const answer = await t.http().post('/contacts').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, first_name: 'Eve' })
    expect(answer.status, JSON.stringify(answer.body)).toBe(400)
    expect(answer.body.errors).toEqual({ 'custom_fields_by_name.Tier': 'is required' })
    expect(await contactsOf(tenant)).toBe(0)
    const valued = await t.http().post('/contacts').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, first_name: 'Eve', custom_fields_by_name: { Tier: 'gold' } })
    expect(valued.status, JSON.stringify(valued.body)).toBe(201)
  })

  it('when a patch points at a company of another organization, then 400 names it and the record is unchanged; a patch of an unknown id is 404', async () => {
    const contact = (await t.http().post('/contacts').set('x-api-key', acme.apiKey)
      .send({ organization_id: acme.organization.id, first_name: 'Grace', company_id: acmeCompany }).expect(201)).body
    const refused = await t.http().patch(`/contacts/${contact.id}`).set('x-api-key', acme.apiKey).send({ first_name: 'Mallory', company_id: globexCompany })
    expect(refused.status, JSON.stringify(refused.body)).toBe(400)
    expect(refused.body.errors).toEqual({ company_id: 'must be a company of this organization' })
    const stored = await t.db('contacts').where({ id: contact.id }).first()
    expect(stored).toMatchObject({ first_name: 'Grace', company_id: acmeCompany })

    const result = await t.http().patch(`/contacts/${contact.id}`).set('x-api-key', acme.apiKey).send({ first_name: 'Grace H.', company_id: null })
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body).toMatchObject({ first_name: 'Grace H.', company_id: null })
    expect(await t.db('contacts').where({ id: contact.id }).first()).toMatchObject({ first_name: 'Grace H.', company_id: null })

    await t.http().patch('/contacts/999999').set('x-api-key', acme.apiKey).send({ company_id: acmeCompany }).expect(404)
  })

  it('when a member is made owner of a contact by a patch, then the member reference is checked in the update and a non-member is refused', async () => {
    const member = await addMember(t, acme, 'member')
    const contact = (await t.http().post('/contacts').set('x-api-key', acme.apiKey)
      .send({ organization_id: acme.organization.id, first_name: 'Linus' }).expect(201)).body
    const patched = await t.http().patch(`/contacts/${contact.id}`).set('x-api-key', acme.apiKey).send({ owned_by_user_id: member.user.id })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body.owned_by_user_id).toBe(member.user.id)
    const refused = await t.http().patch(`/contacts/${contact.id}`).set('x-api-key', acme.apiKey).send({ owned_by_user_id: globex.user.id })
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual({ owned_by_user_id: 'must be a member of this organization' })
  })

  it('when somebody subscribed to the event, then the event is stored with the change, a refused write stores neither, and a patch event carries the old values', async () => {
    const tenant = await createTenant(t, 'Subscribed')
    t.app.set('webhookAllowPrivate', true)
    const subscription = (await t.http().post('/webhook-subscriptions').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, url: 'http://127.0.0.1:9/hooks', events: ['contacts.created', 'contacts.updated'] })
      .expect(201)).body
    const payloads = async () => (await t.db('webhook_deliveries').where({ subscription_id: subscription.id }).orderBy('id').select('type', 'payload'))
      .map((row: any) => ({ type: row.type, data: (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload).data }))

    const refused = await t.http().post('/contacts').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, first_name: 'Eve', company_id: acmeCompany })
    expect(refused.status, JSON.stringify(refused.body)).toBe(400)
    expect(refused.body.errors).toEqual({ company_id: 'must be a company of this organization' })
    expect(await contactsOf(tenant)).toBe(0)
    expect(await payloads()).toEqual([])

    const result = await t.http().post('/contacts').set('x-api-key', tenant.apiKey)
      .send({ organization_id: tenant.organization.id, first_name: 'Ada', last_name: 'Old' })
    expect(result.status, JSON.stringify(result.body)).toBe(201)
    const patched = await t.http().patch(`/contacts/${result.body.id}`).set('x-api-key', tenant.apiKey).send({ last_name: 'New' })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    await t.http().patch('/contacts/999999').set('x-api-key', tenant.apiKey).send({ last_name: 'Nobody' }).expect(404)

    const events = await payloads()
    expect(events.map((event) => event.type)).toEqual(['contacts.created', 'contacts.updated'])
    expect(events[0].data.object).toEqual(result.body)
    expect(events[1].data.object).toEqual(patched.body)
    expect(events[1].data.previous_attributes).toEqual({ last_name: 'Old' })
  })
  it('when a column is added to contacts while the service runs, then creates and patches still succeed and answer without it', async () => {
    const writeTwice = async (round: string) => {
      for (let i = 0; i < 12; i++) {
        const created = await t.http().post('/contacts').set('x-api-key', acme.apiKey).send({ first_name: `Kept ${round} ${i}` })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        const patched = await t.http().patch(`/contacts/${created.body.id}`).set('x-api-key', acme.apiKey).send({ last_name: 'Statement' })
        expect(patched.status, JSON.stringify(patched.body)).toBe(200)
        expect(patched.body).not.toHaveProperty('added_while_running')
      }
    }
    await writeTwice('before')
    await t.db.raw('ALTER TABLE contacts ADD COLUMN added_while_running text')
    try {
      await writeTwice('after')
    } finally {
      await t.db.raw('ALTER TABLE contacts DROP COLUMN added_while_running')
    }
  })
})
