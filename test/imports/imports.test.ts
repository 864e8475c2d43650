import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { parse } from 'csv-parse/sync'
import { stringify } from 'csv-stringify/sync'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { runToEnd, upload } from './fixtures.js'

/** An import's preview, run, keys, failures, round trip, cancel and tenancy (issue 49), through HTTP. */
describe('CSV imports', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  const csv = (rows: string[][]) => Buffer.from(stringify(rows))
  const contactsOf = (tenant: Tenant) => t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').orderBy('id')

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
    for (const tenant of [acme, other]) {
      const field = await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
      expect(field.status).toBe(201)
    }
  })
  afterAll(async () => { await t.close() })

  it('when rows match stored contacts by e-mail, repeat a key within the file or are invalid, then the preview counts them and names the first errors, writing nothing', async () => {
    await t.http().post('/contacts').set(acme.key).send({ first_name: 'Stored', email: 'stored@imports.test' })
    const before = await contactsOf(acme)
    const res = await upload(t, acme, csv([
      ['First Name', 'Email', 'Budget'],
      ['Stored again', 'STORED@imports.test', '10'],
      ['New', 'new@imports.test', '20'],
      ['New twice', 'new@imports.test', '30'],
      ['Bad mail', 'not-an-email', '1'],
      ['Bad budget', 'budget@imports.test', 'lots'],
      ['', 'nameless@imports.test', '']
    ]), { resource: 'contacts', keys: 'email' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.mapping).toEqual({ 'First Name': 'first_name', Email: 'email', Budget: 'custom_fields_by_name.Budget' })
    expect(res.body.preview).toMatchObject({ rows: 6, to_create: 1, to_update: 2, invalid: 3 })
    expect(res.body.preview.errors).toEqual([
      { row: 4, errors: { email: expect.any(String) } },
      { row: 5, errors: { 'custom_fields_by_name.Budget': 'must be a number' } },
      { row: 6, errors: { first_name: expect.any(String) } }
    ])
    expect(await contactsOf(acme)).toEqual(before)
  })

  it('when a previewed import is run with keys, then matches are updated, repeated keys update the record the file made, and the failed rows download as CSV with an error column', async () => {
    const res = await upload(t, acme, csv([
      ['First Name', 'Email', 'Budget', 'Notes'],
      ['Run stored', 'runstored@imports.test', '5', ''],
      ['Run new', 'runnew@imports.test', '6', 'x'],
      ['Run new again', 'RUNNEW@imports.test', '7', 'y'],
      ['Formula', 'not-an-email', '=1+1', 'z']
    ]), { resource: 'contacts', keys: 'email' })
    const stored = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Before', last_name: 'Kept', email: 'runstored@imports.test' })).body
    const heard: any[] = []
    const listener = (record: any) => heard.push(record)
    t.app.service('imports').on('patched', listener)
    const done = await runToEnd(t, acme, res.body.id)
    t.app.service('imports').removeListener('patched', listener)
    expect(done).toMatchObject({ status: 'completed', rows_read: 4, rows_created: 1, rows_updated: 2, rows_failed: 1 })
    expect(heard.map((record) => record.status)).toEqual(['queued', 'running', 'running', 'completed'])
    expect(heard[2]).toMatchObject({ id: res.body.id, rows_read: 4 })
    const read = await t.http().get(`/contacts/${stored.id}`).set(acme.key)
    expect(read.body).toMatchObject({ first_name: 'Run stored', last_name: 'Kept', custom_fields_by_name: { Budget: 5 } })
    const made = (await t.http().get('/contacts?email[$ilike]=runnew@imports.test').set(acme.key)).body
    expect(made.total).toBe(1)
    expect(made.data[0]).toMatchObject({ first_name: 'Run new again', email: 'RUNNEW@imports.test', custom_fields_by_name: { Budget: 7 } })

    const failures = await t.http().get(`/imports/${res.body.id}`).set(acme.key).set('Accept', 'text/csv')
    expect(failures.status).toBe(200)
    expect(failures.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(failures.headers['content-disposition']).toBe(`attachment; filename="import-${res.body.id}-failures.csv"`)
    const rows: Record<string, string>[] = parse(failures.text, { columns: true })
    expect(rows).toEqual([{ 'First Name': 'Formula', Email: 'not-an-email', Budget: "'=1+1", Notes: 'z', error: 'email: must be an e-mail address' }])
  })

  it('when a contact names a company, then the company is found by name in any case or created once, and the preview counts the companies to create', async () => {
    const existing = (await t.http().post('/companies').set(acme.key).send({ name: 'Initech' })).body
    const res = await upload(t, acme, csv([
      ['First Name', 'Company'],
      ['Peter', 'INITECH'],
      ['Bill', 'Initrode'],
      ['Joanna', 'initrode']
    ]), { resource: 'contacts' })
    expect(res.body.preview).toMatchObject({ to_create: 3, companies_to_create: 1 })
    await runToEnd(t, acme, res.body.id)
    const people = await t.db('contacts').where({ organization_id: acme.organization.id }).whereIn('first_name', ['Peter', 'Bill', 'Joanna']).orderBy('id')
    const initrode = await t.db('companies').where({ organization_id: acme.organization.id, name: 'Initrode' })
    expect(initrode).toHaveLength(1)
    expect(people.map((person) => person.company_id)).toEqual([existing.id, initrode[0].id, initrode[0].id])
  })

  it('when companies are imported by domain, then the stored company of the same website is updated and a bare domain gets https://', async () => {
    const stored = (await t.http().post('/companies').set(acme.key).send({ name: 'Globex', website: 'https://www.globex.example/about' })).body
    const res = await upload(t, acme, csv([['Company name', 'Company Domain Name', 'Industry'], ['Globex Corp', 'globex.example', 'Energy'], ['Hooli', 'hooli.example', 'Tech']]), { resource: 'companies', keys: 'domain' })
    expect(res.body.preview).toMatchObject({ to_create: 1, to_update: 1, invalid: 0 })
    expect(await runToEnd(t, acme, res.body.id)).toMatchObject({ status: 'completed', rows_created: 1, rows_updated: 1 })
    expect((await t.http().get(`/companies/${stored.id}`).set(acme.key)).body).toMatchObject({ name: 'Globex Corp', industry: 'Energy' })
    expect((await t.http().get('/companies?name=Hooli').set(acme.key)).body.data[0].website).toBe('https://hooli.example')
  })

  it('when an organization\'s contacts are exported and the CSV imported into another, then the other exports the same records', async () => {
    const source = await createTenant(t, 'Source')
    const target = await createTenant(t, 'Target')
    for (const tenant of [source, target]) {
      await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'contact', key: 'tags', name: 'Tags', field_type: 'multiselect', options: ['vip', 'new'] })
    }
    const company = (await t.http().post('/companies').set(source.key).send({ name: 'Round, Trip & Co' })).body
    const sent = await t.http().post('/contacts').set(source.key).send([
      { first_name: '=Eve', last_name: 'Formula', email: 'eve@round.test', company_id: company.id, custom_fields_by_name: { Tags: ['vip', 'new'] } },
      { first_name: 'Ünïcode', last_name: 'Ça va\nbien', email: 'uni@round.test', external_id: 'ext-1' }
    ])
    expect(sent.status).toBe(201)
    const exported = await t.http().get('/contacts').set(source.key).set('Accept', 'text/csv')
    const created = await upload(t, target, Buffer.from(exported.text), { resource: 'contacts', keys: 'email', mapping: JSON.stringify({ owned_by_user_id: null, company_id: null }) })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body.mapping).toMatchObject({ first_name: 'first_name', company_name: 'company_name', Tags: 'custom_fields_by_name.Tags', id: null, created_at: null })
    expect(await runToEnd(t, target, created.body.id)).toMatchObject({ status: 'completed', rows_created: 2, rows_failed: 0 })
    const again = await t.http().get('/contacts').set(target.key).set('Accept', 'text/csv')
    const kept = ['first_name', 'last_name', 'email', 'external_id', 'company_name', 'Tags']
    const project = (text: string) => (parse(text, { columns: true }) as Record<string, string>[]).map((row: Record<string, string>) => Object.fromEntries(kept.map((column) => [column, row[column]])))
    expect(project(again.text)).toEqual(project(exported.text))
    expect(project(again.text)[0]).toMatchObject({ first_name: "'=Eve", company_name: 'Round, Trip & Co', Tags: 'vip; new' })
  })

  it('when a mapping is changed on a previewed import, then it is previewed again; a mapping to an unknown field or column is a 400', async () => {
    const res = await upload(t, acme, csv([['Given', 'Mail'], ['Ada', 'ada@patch.test']]), { resource: 'contacts' })
    expect(res.body.mapping).toEqual({ Given: null, Mail: null })
    expect(res.body.preview).toMatchObject({ invalid: 1 })
    const patched = await t.http().patch(`/imports/${res.body.id}`).set(acme.key).send({ mapping: { Given: 'first_name', Mail: 'email' }, keys: ['email'] })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body).toMatchObject({ keys: ['email'], preview: { to_create: 1, invalid: 0 } })
    const unknown = await t.http().patch(`/imports/${res.body.id}`).set(acme.key).send({ mapping: { Given: 'nickname' } })
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors['mapping.Given']).toBeTruthy()
    const column = await t.http().patch(`/imports/${res.body.id}`).set(acme.key).send({ mapping: { Nope: 'first_name' } })
    expect(column.body.errors['mapping.Nope']).toBe('is not a column of the file')
    const key = await t.http().patch(`/imports/${res.body.id}`).set(acme.key).send({ keys: ['domain'] })
    expect(key.status).toBe(400)
    expect(key.body.errors.keys).toMatch(/email, phone, external_id/)
  })

  it('when an import is cancelled before it starts, then starting it is a 409, nothing is imported, and cancelling again is a 409', async () => {
    const res = await upload(t, acme, csv([['First Name'], ['Never']]), { resource: 'contacts' })
    const cancelled = await t.http().post(`/imports/${res.body.id}`).set(acme.key).set('X-Service-Method', 'cancel').send({})
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ status: 'cancelled' })
    expect((await t.http().post(`/imports/${res.body.id}`).set(acme.key).set('X-Service-Method', 'start').send({})).status).toBe(409)
    expect((await t.http().post(`/imports/${res.body.id}`).set(acme.key).set('X-Service-Method', 'cancel').send({})).status).toBe(409)
    await t.app.get('outbox').deliverDue()
    expect(await t.db('contacts').where({ organization_id: acme.organization.id, first_name: 'Never' })).toEqual([])
  })

  it("when another organization's import is read, started, cancelled or its failures downloaded, then 404; naming another organization is a 403", async () => {
    const theirs = (await upload(t, other, csv([['First Name'], ['Theirs']]), { resource: 'contacts' })).body
    expect((await t.http().get(`/imports/${theirs.id}`).set(acme.key)).status).toBe(404)
    expect((await t.http().get(`/imports/${theirs.id}`).set(acme.key).set('Accept', 'text/csv')).status).toBe(404)
    for (const method of ['start', 'cancel']) {
      const res = await t.http().post(`/imports/${theirs.id}`).set(acme.key).set('X-Service-Method', method).send({})
      expect(res.status).toBe(404)
    }
    expect((await t.http().patch(`/imports/${theirs.id}`).set(acme.key).send({ keys: [] })).status).toBe(404)
    expect((await t.http().get(`/imports?organization_id=${other.organization.id}`).set(acme.key)).status).toBe(403)
    const named = await upload(t, acme, csv([['First Name'], ['X']]), { resource: 'contacts', organization_id: String(other.organization.id) })
    expect(named.status).toBe(403)
    expect((await t.http().get(`/imports/${theirs.id}`).set(other.key)).body.status).toBe('previewed')
    expect((await t.http().get('/imports').set(acme.key)).body.data.map((record: any) => record.organization_id)).not.toContain(other.organization.id)
  })
})
