import feathersCore from '@feathersjs/feathers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

// Validation messages speak the user's language: no regular expression, no JSON-Schema term.
const JARGON = /pattern|\^|\$|must NOT|must match|>=|<=|must be (number|string|integer|boolean|object|array|null)\b|format "/

describe('validation messages', () => {
  let t: TestApp
  let acme: Tenant
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t)
  })
  afterAll(async () => {
    await t.close()
  })

  it.each([
    ['/contacts', { first_name: 'Ada', email: 'not-an-address' }, { email: 'must be an e-mail address' }],
    ['/contacts', { first_name: ' ', phone_country_code: '44' }, { first_name: 'must not be blank', phone_country_code: 'must be a country calling code like +44' }],
    ['/contacts', { first_name: 'Ada', avatar_url: 'ftp://example.com/a.png' }, { avatar_url: 'must be an http:// or https:// URL' }],
    ['/contacts', { first_name: 'Ada', phone: 'call me' }, { phone: 'must be a phone number: digits, spaces and + ( ) . - /' }],
    ['/activity-types', { name: 'Call', color: 'red' }, { color: 'must be a colour like #1A2B3C' }],
    ['/activity-types', { name: 'Call', color: 12 }, { color: 'must be text or null' }],
    ['/companies', { name: 'X'.repeat(1000) }, { name: expect.stringMatching(/^must have at most \d+ characters$/) }],
    ['/products', { name: 'Tea', price: '1,50' }, { price: 'must be an amount like 10.50: at most 12 digits before the point and 2 after' }],
    ['/custom-fields', { name: 'Tier', key: 'Tier!', entity_type: 'contact', field_type: 'text' }, { key: expect.stringMatching(/^must start with a lower-case letter/) }]
  ])('when POST %s has %j, then 400 with %j', async (path, body, errors) => {
    const res = await t.http().post(path).set(acme.key).send(body)
    expect(res.status).toBe(400)
    expect(res.body.errors).toMatchObject(errors)
    for (const message of Object.values(res.body.errors as Record<string, string>)) expect(message).not.toMatch(JARGON)
  })

  it('when a deal has a date that is not YYYY-MM-DD, then 400 with "must be a date like 2026-01-31"', async () => {
    const res = await t.http().post('/deals').set(acme.key).send({ name: 'D', amount: 1, currency: 'EUR', status: 'open', pipeline_id: 1, pipeline_stage_id: 1, expected_close_date: '31/12/2026' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toMatchObject({ expected_close_date: 'must be a date like 2026-01-31' })
  })

  it('when a query number is beyond any double (1e400), then 400 naming the field, never a page with skip null', async () => {
    for (const query of [{ $skip: '1e400' }, { $limit: '1e400' }]) {
      const res = await t.http().get('/contacts').set(acme.key).query(query)
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body.errors).toEqual({ [Object.keys(query)[0]]: 'must be a number' })
    }
    const listed = await t.http().get('/organizations-users').set(acme.key).query({ $skip: '1e400' })
    expect(listed.status, JSON.stringify(listed.body)).toBe(400)
  })

  it('when a body comes with another Content-Type than JSON, or none, then 400 naming Content-Type: application/json, and nothing is created', async () => {
    const json = JSON.stringify({ first_name: 'Typed' })
    for (const [type, body] of [['text/plain', json], ['application/x-www-form-urlencoded', 'first_name=Typed'], ['multipart/form-data; boundary=x', '--x--'], [undefined, json]] as const) {
      let request = t.http().post('/contacts').set(acme.key)
      request = type ? request.set('Content-Type', type) : request.unset('Content-Type')
      const res = await request.send(type ? body : Buffer.from(body))
      expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
      expect(res.body.message).toContain('Content-Type: application/json')
      expect(res.body.message).toContain(type ? `it came as ${type.split(';')[0]}` : 'it came without a Content-Type')
    }
    const patched = await t.http().patch('/contacts/1').set(acme.key).set('Content-Type', 'text/plain').send(json)
    expect(patched.status).toBe(400)
    expect(patched.body.message).toContain('Content-Type: application/json')
    expect((await t.http().get('/contacts').set(acme.key).query({ first_name: 'Typed' })).body.total).toBe(0)
    // A JSON type with a suffix or a charset is JSON; a write without a body needs no type.
    expect((await t.http().post('/contacts').set(acme.key).set('Content-Type', 'application/merge-patch+json').send(json)).status).toBe(201)
    const created = await t.http().post('/contacts').set(acme.key).set('Content-Type', 'application/json; charset=utf-8').send(json)
    expect(created.status).toBe(201)
    expect((await t.http().delete(`/contacts/${created.body.id}`).set(acme.key).set('Content-Type', 'text/plain')).status).toBe(200)
  })

  it('when an upload is multipart/form-data, then it reaches the upload (which names its missing file), not the Content-Type refusal', async () => {
    const res = await t.http().post('/product-media').set(acme.key).field('product_id', '1')
    expect(res.status).toBe(400)
    expect(res.body.message).not.toContain('Content-Type')
  })

  it('when the JSON is malformed, then 400 saying where: the position, line and column', async () => {
    const cases: [string, string][] = [
      ['{"first_name": "Ada",}', 'at position 21 (line 1, column 22)'],
      ['{\n  "first_name": "Ada"\n  "last_name": "L"\n}', 'at position 26 (line 3, column 3)'],
      ['{"first_name": tru}', 'at position 15 (line 1, column 16)'],
      ['{"first_name": "Ada"', 'at position 20 (line 1, column 21)']
    ]
    for (const [text, where] of cases) {
      const res = await t.http().post('/contacts').set(acme.key).set('Content-Type', 'application/json').send(text)
      expect(res.status, text).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
      expect(res.body.message, text).toContain(`Invalid JSON in the request body ${where}`)
    }
  })

  it('when GET names a record by something that is not an id, then 400 with errors.id on every tenant resource', async () => {
    const optionsOf = (path: string) => feathersCore.getServiceOptions(t.app.service(path as any)) as any
    const resources = Object.keys(t.app.services).filter((path) => {
      const options = optionsOf(path)
      return options?.registeredAs === 'tenant-resource' && options.methods.includes('get') && !path.includes(':')
    })
    expect(resources).toEqual(expect.arrayContaining(['contacts', 'companies', 'deals', 'activities', 'products', 'webhook-subscriptions']))
    for (const path of resources) {
      // A resource for people only (API keys refused) is asked with the owner's JWT.
      const res = await t.http().get(`/${path}/abc`).set(optionsOf(path).refusesApiKeys === true ? acme.bearer : acme.key)
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(400)
      expect(res.body.errors, path).toEqual({ id: 'must be a record id: a whole number between 1 and 2147483647' })
    }
  })

  it('when a filter uses an operator the field does not take, then the error names only that operator, in the query string and in a GET body', async () => {
    const inQuery = await t.http().get('/contacts').set(acme.key).query({ 'email[$regex]': 'a' })
    const inBody = await t.http().get('/contacts').set(acme.key).send({ query: { email: { $regex: 'a' } } })
    for (const res of [inQuery, inBody]) {
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ 'email.$regex': 'is not allowed' })
    }
    // A value of the wrong type still says which types it may take.
    const wrongType = await t.http().post('/activity-types').set(acme.key).send({ name: 'Call', color: 12 })
    expect(wrongType.body.errors).toEqual({ color: 'must be text or null' })
  })

  it('when the API key is missing or unknown, then the spec\'s 401 "Invalid API key"', async () => {
    for (const headers of [{}, { 'x-api-key': 'crm_not_a_key' }]) {
      const res = await t.http().get('/contacts').set(headers)
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ name: 'NotAuthenticated', message: 'Invalid API key', code: 401, className: 'not-authenticated' })
    }
  })

  it('when a list filter has the wrong type, then the query error is in words too', async () => {
    const res = await t.http().get('/contacts').set(acme.key).query({ $limit: 'ten' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ $limit: 'must be a whole number' })
  })
})
