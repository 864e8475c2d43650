import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { parse } from 'csv-parse/sync'
import { startApp, countQueries } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline } from '../services/deal-fixtures.js'

/** CSV export of any list (issue 49): Accept: text/csv on GET /<resource>, streamed in keyset pages. */
describe('CSV export of lists', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant
  let companyId: number

  const csvOf = (tenant: Tenant, path: string) => t.http().get(path).set(tenant.key).set('Accept', 'text/csv')
  const rowsOf = (text: string): Record<string, string>[] => parse(text, { columns: true })

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
    const field = await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
    expect(field.status, JSON.stringify(field.body)).toBe(201)
    await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'tags', name: 'Tags', field_type: 'multiselect', options: ['vip', 'new'] })
    companyId = (await t.http().post('/companies').set(acme.key).send({ name: 'Analytical Engines' })).body.id
    const created = await t.http().post('/contacts').set(acme.key).send([
      { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@export.test', company_id: companyId, custom_fields_by_name: { Budget: 1500.5, Tags: ['vip', 'new'] } },
      { first_name: '=HYPERLINK("http://evil.example")', last_name: '+1 cmd', email: 'formula@export.test' },
      { first_name: 'Grace', last_name: 'Hopper, "Amazing"', email: 'grace@export.test' }
    ])
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    await t.http().post('/contacts').set(other.key).send({ first_name: 'Stranger', email: 'stranger@export.test' })
  })
  afterAll(async () => { await t.close() })

  it('when a list is asked for with Accept: text/csv, then every record of the organization is a row, custom fields by name and the company by name', async () => {
    const res = await csvOf(acme, '/contacts')
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(res.headers['content-disposition']).toBe('attachment; filename="contacts.csv"')
    const rows = rowsOf(res.text)
    expect(rows.map((row) => row.email)).toEqual(['ada@export.test', 'formula@export.test', 'grace@export.test'])
    const ada = rows[0]
    expect(ada).toMatchObject({ first_name: 'Ada', Budget: '1500.5', Tags: 'vip; new', company_id: String(companyId), company_name: 'Analytical Engines', owner_name: '' })
    expect(ada.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(rows[2].last_name).toBe('Hopper, "Amazing"')
    expect(Object.keys(ada)).not.toContain('custom_fields_by_name')
    expect(res.text).not.toContain('stranger@export.test')
  })

  it('when a cell starts like a formula, then it is prefixed with a single quote; a plain negative number is not', async () => {
    const rows = rowsOf((await csvOf(acme, '/contacts?email=formula@export.test')).text)
    expect(rows).toHaveLength(1)
    expect(rows[0].first_name).toBe(`'=HYPERLINK("http://evil.example")`)
    expect(rows[0].last_name).toBe(`'+1 cmd`)
  })

  it('when deals are exported, then amounts are exact decimal text, stage, pipeline and contact by name, and formulas escaped', async () => {
    const board = await createPipeline(t, acme)
    const ada = (await t.http().get('/contacts?email=ada@export.test').set(acme.key)).body.data[0]
    const deal = await createDeal(t, acme, board, { name: '@SUM(A1)', amount: '123456789012.45', contact_id: ada.id })
    const rows = rowsOf((await csvOf(acme, `/deals?id=${deal.id}`)).text)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ name: `'@SUM(A1)`, amount: '123456789012.45', contact_name: 'Ada Lovelace', owner_name: `${acme.user.first_name} ${acme.user.last_name}` })
    expect(rows[0].pipeline_stage_name).toBe('Lead')
  })

  it('when the client sends $limit, then the export stops after that many records', async () => {
    const rows = rowsOf((await csvOf(acme, '/contacts?$limit=2')).text)
    expect(rows).toHaveLength(2)
  })

  it('when the list has filters, a sort and $select, then the CSV has those rows in that order and those columns', async () => {
    const res = await csvOf(acme, '/contacts?$sort[first_name]=-1&$select[]=first_name&$select[]=email&email[$ilike]=%25@export.test')
    expect(res.status).toBe(200)
    const rows = rowsOf(res.text)
    expect(Object.keys(rows[0])).toEqual(['id', 'first_name', 'email'])
    expect(rows.map((row) => row.first_name)).toEqual(['Grace', 'Ada', `'=HYPERLINK("http://evil.example")`])
  })

  it('when Accept prefers JSON (or is */*), then the list answers JSON as before', async () => {
    const res = await t.http().get('/contacts').set(acme.key).set('Accept', '*/*')
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(3)
  })

  it('when the CSV is asked with $skip, then 400 naming $skip', async () => {
    const res = await csvOf(acme, '/contacts?$skip=1')
    expect(res.status).toBe(400)
    expect(res.body.errors.$skip).toBeTruthy()
  })

  it('when another organization is named, then 403', async () => {
    const res = await csvOf(acme, `/contacts?organization_id=${other.organization.id}`)
    expect(res.status).toBe(403)
  })

  it('when 2,500 records are exported sorted by a nullable column, then they come in pages of the keyset, each record once, in order', async () => {
    const batch = (from: number) => Array.from({ length: 100 }, (_, i) => ({ name: `Co ${String(from + i).padStart(5, '0')}`, industry: (from + i) % 3 === 0 ? null : `Ind ${(from + i) % 7}` }))
    for (let from = 0; from < 2500; from += 100) {
      const res = await t.http().post('/companies').set(other.key).send(batch(from))
      expect(res.status, JSON.stringify(res.body)).toBe(201)
    }
    const { result: res, statements } = await countQueries(t.app.get('knex'), () => csvOf(other, '/companies?$sort[industry]=1&$select[]=name&$select[]=industry'))
    expect(res.status).toBe(200)
    const rows = rowsOf(res.text)
    expect(rows).toHaveLength(2500)
    expect(new Set(rows.map((row) => row.id)).size).toBe(2500)
    const industries = rows.map((row) => row.industry)
    const firstEmpty = industries.indexOf('')
    expect(industries.slice(firstEmpty).every((industry) => industry === '')).toBe(true)
    expect(industries.slice(0, firstEmpty)).toEqual([...industries.slice(0, firstEmpty)].sort())
    const pages = statements.filter((statement) => statement.sql.includes('__cursor'))
    expect(pages.length).toBe(3)
    expect(pages.every((page) => /limit \$\d+/i.test(page.sql) && page.bindings.includes(1000))).toBe(true)
  })
})
