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

  it('when a list filter has the wrong type, then the query error is in words too', async () => {
    const res = await t.http().get('/contacts').set(acme.key).query({ $limit: 'ten' })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ $limit: 'must be a whole number' })
  })
})
