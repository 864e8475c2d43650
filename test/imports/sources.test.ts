import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { googleCsv, hubspotCsv, outlookCsv, pipedriveCsv, runToEnd, upload } from './fixtures.js'
import type { Person } from './fixtures.js'

/** Imports of the contact exports of HubSpot, Pipedrive, Google Contacts and Outlook (issue 49): the mapping proposed, the preview, the run. */
describe('CSV imports from other CRMs and address books', () => {
  let t: TestApp
  let acme: Tenant

  const people: Person[] = [
    { first: 'Zoë', last: 'Brontë', email: 'zoe@sources.test', phone: '+44 20 7946 0958', company: 'Façade, Ltd.', notes: 'Met at the fair.\nWants a demo, "soon".' },
    { first: 'François', last: 'Ørsted', email: 'francois@sources.test', company: 'Façade, Ltd.', notes: 'Line one\r\nLine two' },
    { first: 'Grace', last: 'Hopper', email: 'grace@sources.test', company: 'Navy' }
  ]
  const liveContacts = (tenant: Tenant) => t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').orderBy('id')

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
  })
  afterAll(async () => { await t.close() })

  async function freshTenant() {
    const tenant = await createTenant(t, 'Importer')
    const notes = await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'contact', key: 'notes', name: 'Notes', field_type: 'text' })
    expect(notes.status).toBe(201)
    return tenant
  }

  it('when a HubSpot export (BOM, quoted commas) is uploaded, then the mapping is proposed from its header and the preview counts 3 to create and writes nothing', async () => {
    const tenant = await freshTenant()
    const res = await upload(t, tenant, hubspotCsv(people), { resource: 'contacts', keys: 'email' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({ status: 'previewed', resource: 'contacts', encoding: 'utf8', delimiter: ',', file_name: 'contacts.csv', keys: ['email'] })
    expect(res.body.columns[0]).toBe('Record ID')
    expect(res.body.mapping).toMatchObject({
      'Record ID': 'external_id', 'First Name': 'first_name', 'Last Name': 'last_name', Email: 'email', 'Phone Number': 'phone', 'Company Name': 'company_name',
      'Contact owner': null, 'Create Date': null
    })
    expect(res.body.preview).toEqual({ rows: 3, to_create: 3, to_update: 0, invalid: 0, companies_to_create: 2, errors: [] })
    expect(res.body).not.toHaveProperty('file_key')
    expect(await liveContacts(tenant)).toEqual([])
    expect(await t.db('companies').where({ organization_id: tenant.organization.id })).toEqual([])
  })

  it('when the HubSpot import runs, then the contacts are created with their companies, one company per name', async () => {
    const tenant = await freshTenant()
    const created = (await upload(t, tenant, hubspotCsv(people), { resource: 'contacts', keys: 'email' })).body
    const done = await runToEnd(t, tenant, created.id)
    expect(done).toMatchObject({ status: 'completed', rows_read: 3, rows_created: 3, rows_updated: 0, rows_failed: 0 })
    expect(done.started_at).toBeTruthy()
    expect(done.finished_at).toBeTruthy()
    const contacts = await liveContacts(tenant)
    expect(contacts.map((c) => [c.first_name, c.last_name, c.email, c.external_id])).toEqual([
      ['Zoë', 'Brontë', 'zoe@sources.test', '9000'], ['François', 'Ørsted', 'francois@sources.test', '9001'], ['Grace', 'Hopper', 'grace@sources.test', '9002']
    ])
    const companies = await t.db('companies').where({ organization_id: tenant.organization.id }).orderBy('id')
    expect(companies.map((c) => c.name)).toEqual(['Façade, Ltd.', 'Navy'])
    expect(contacts.map((c) => c.company_id)).toEqual([companies[0].id, companies[0].id, companies[1].id])
    expect(contacts[0].created_by_user_id).toBe(tenant.user.id)
  })

  it('when a Pipedrive export in Latin-1 with ";" is uploaded with encoding=latin1, then the delimiter is detected and the accents survive', async () => {
    const tenant = await freshTenant()
    const res = await upload(t, tenant, pipedriveCsv(people), { resource: 'contacts', keys: 'email', encoding: 'latin1' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({ delimiter: ';', encoding: 'latin1' })
    expect(res.body.mapping).toMatchObject({
      'Person - First name': 'first_name', 'Person - Last name': 'last_name', 'Person - Organization': 'company_name',
      'Person - Email - Work': 'email', 'Person - Phone - Work': 'phone', 'Person - Name': null
    })
    const done = await runToEnd(t, tenant, res.body.id)
    expect(done).toMatchObject({ status: 'completed', rows_created: 3, rows_failed: 0 })
    expect((await liveContacts(tenant)).map((c) => `${c.first_name} ${c.last_name}`)).toEqual(['Zoë Brontë', 'François Ørsted', 'Grace Hopper'])
  })

  it('when a Google Contacts export with notes over several lines is imported, then each note is one custom field value, newlines kept', async () => {
    const tenant = await freshTenant()
    const res = await upload(t, tenant, googleCsv(people), { resource: 'contacts' })
    expect(res.body.mapping).toMatchObject({ 'First Name': 'first_name', 'E-mail 1 - Value': 'email', 'Phone 1 - Value': 'phone', 'Organization Name': 'company_name', Notes: 'custom_fields_by_name.Notes' })
    expect(res.body.preview).toMatchObject({ rows: 3, to_create: 3, invalid: 0 })
    const done = await runToEnd(t, tenant, res.body.id)
    expect(done).toMatchObject({ status: 'completed', rows_created: 3 })
    const contacts = (await t.http().get('/contacts?$sort[id]=1').set(tenant.key)).body.data
    expect(contacts[0].custom_fields_by_name).toEqual({ Notes: 'Met at the fair.\nWants a demo, "soon".' })
    expect(contacts[1].custom_fields_by_name).toEqual({ Notes: 'Line one\r\nLine two' })
  })

  it('when an Outlook export with tabs is imported, then the mobile phone is the phone and the e-mail address the e-mail', async () => {
    const tenant = await freshTenant()
    const res = await upload(t, tenant, outlookCsv(people), { resource: 'contacts', keys: 'email' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.delimiter).toBe('\t')
    expect(res.body.mapping).toMatchObject({ 'E-mail Address': 'email', 'Mobile Phone': 'phone', 'Home Phone': null, Company: 'company_name', Notes: 'custom_fields_by_name.Notes' })
    const done = await runToEnd(t, tenant, res.body.id)
    expect(done).toMatchObject({ status: 'completed', rows_created: 3, rows_failed: 0 })
    expect((await liveContacts(tenant)).map((c) => c.phone)).toEqual(['+44 20 7946 0958', null, null])
  })

  it('when the file has no header, is not CSV or names a column twice, then 400 on file and nothing is kept', async () => {
    const empty = await upload(t, acme, Buffer.from(''), { resource: 'contacts' })
    expect(empty.status).toBe(400)
    expect(empty.body.errors.file).toMatch(/empty/)
    const twice = await upload(t, acme, Buffer.from('Email,Email\na@b.test,c@d.test\n'), { resource: 'contacts' })
    expect(twice.status).toBe(400)
    expect(twice.body.errors.file).toMatch(/twice/)
    const broken = await upload(t, acme, Buffer.from('First Name,Email\n"Ada,ada@x.test\n'), { resource: 'contacts' })
    expect(broken.status).toBe(400)
    expect(broken.body.errors.file).toBeTruthy()
    // A quote inside an unquoted cell: csv-parse's INVALID_OPENING_QUOTE, a 400 like the others.
    const stray = await upload(t, acme, Buffer.from('First Name,Email\nA"da,ada@x.test\n'), { resource: 'contacts' })
    expect(stray.status, JSON.stringify(stray.body)).toBe(400)
    expect(stray.body.errors.file).toMatch(/quote/i)
    expect((await t.http().get('/imports').set(acme.key)).body.total).toBe(0)
  })

  it('when the file is larger than IMPORT_MAX_BYTES, then 413', async () => {
    const before = t.app.get('importMaxBytes')
    t.app.set('importMaxBytes', 1000)
    try {
      const res = await upload(t, acme, Buffer.from(`Email\n${'x@y.test\n'.repeat(500)}`), { resource: 'contacts' })
      expect(res.status).toBe(413)
    } finally {
      t.app.set('importMaxBytes', before)
    }
  })
})
