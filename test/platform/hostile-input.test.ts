import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, allowingPrivateAddresses } from '../helpers/fixtures.js'
import { inTransaction } from '../../src/hooks/deferred-events.js'
import { shapeError } from '../../src/hooks/errors.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'

const NUL_MESSAGE = 'must not contain a NUL character'

describe('hostile input: NUL characters', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const expectNulRefused = (res: { status: number; body: any }, field: string) => {
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ name: 'BadRequest', message: 'Validation failed', code: 400, className: 'bad-request', errors: { [field]: NUL_MESSAGE } })
  }

  it('when a company name in a JSON body holds a NUL, then 400 naming name and nothing is stored', async () => {
    const res = await t.http().post('/companies').set(acme.key).send({ name: 'Ini\u0000tech' })
    expectNulRefused(res, 'name')
    const list = await t.http().get('/companies').set(acme.key)
    expect(list.body.data.map((c: any) => c.name)).not.toContain('Ini\u0000tech')
    expect(list.body.total).toBe(0)
  })

  it('when a nested value or an object key holds a NUL, then 400 naming the dotted path', async () => {
    const nested = await t.http().post('/companies').set(acme.key).send({ name: 'Initech', custom_fields_by_name: { Score: 'a\u0000' } })
    expectNulRefused(nested, 'custom_fields_by_name.Score')
    const key = await t.http().post('/companies').set(acme.key).send({ name: 'Initech', custom_fields_by_name: { 'Sco\u0000re': 'a' } })
    expectNulRefused(key, 'custom_fields_by_name.Sco\\u0000re')
  })

  it('when a contacts filter in the query string holds a NUL, then 400 naming query.first_name', async () => {
    const res = await t.http().get('/contacts').set(acme.key).query({ first_name: 'Ada\u0000' })
    expectNulRefused(res, 'query.first_name')
  })

  it('when a filter in a GET body holds a NUL, then 400 naming query.name', async () => {
    const res = await t.http().get('/companies').set(acme.key).send({ query: { name: 'x\u0000' } })
    expectNulRefused(res, 'query.name')
  })

  it('when a contact search term holds a NUL, then 400 naming searchTerm', async () => {
    const res = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'search').send({ searchTerm: 'ad\u0000a', searchIn: 'name' })
    expectNulRefused(res, 'searchTerm')
  })

  it('when an unauthenticated login carries a NUL in the e-mail or the password, then 400 naming the field', async () => {
    const email = await t.http().post('/authentication').send({ strategy: 'local', email: `${acme.user.email}\u0000`, password: acme.password })
    expectNulRefused(email, 'email')
    const password = await t.http().post('/authentication').send({ strategy: 'local', email: acme.user.email, password: 'x\u0000' })
    expectNulRefused(password, 'password')
  })

  it('when a custom field value holds a NUL, then 400 naming it and the contact is not created', async () => {
    const defined = await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'score', name: 'Score', field_type: 'text' })
    expect(defined.status).toBe(201)
    const res = await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ada', custom_fields_by_name: { Score: 'high\u0000' } })
    expectNulRefused(res, 'custom_fields_by_name.Score')
    const list = await t.http().get('/contacts').set(acme.key)
    expect(list.body.total).toBe(0)
  })

  it("when a NUL-bearing patch targets another organization's company, then 400 and that company is unchanged", async () => {
    const theirs = await t.http().post('/companies').set(globex.key).send({ name: 'Globex Corp' })
    expect(theirs.status).toBe(201)
    const res = await t.http().patch(`/companies/${theirs.body.id}`).set(acme.key).send({ name: 'owned\u0000' })
    expectNulRefused(res, 'name')
    const read = await t.http().get(`/companies/${theirs.body.id}`).set(globex.key)
    expect(read.body.name).toBe('Globex Corp')
    const notFound = await t.http().patch(`/companies/${theirs.body.id}`).set(acme.key).send({ name: 'owned' })
    expect(notFound.status).toBe(404)
  })

  it('when an internal call carries a NUL past the HTTP layer, then the database refusal becomes a 400, not a 500', async () => {
    const call = t.app.service('companies').create({ organization_id: acme.organization.id, name: 'x\u0000' } as any, { system: true } as any)
    await expect(call).rejects.toMatchObject({ code: 400, name: 'BadRequest' })
  })
})

describe('hostile input inside the write transaction', () => {
  let t: TestApp
  let acme: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    // Never reached (the outbox refuses the loopback address): it only makes every write open its transaction.
    const subscribed = await allowingPrivateAddresses(t, () => t.http().post('/webhook-subscriptions').set(acme.key).send({ url: 'http://127.0.0.1:9/hooks', events: ['*'] }))
    expect(subscribed.status).toBe(201)
  })
  afterAll(async () => {
    await t.close()
  })

  const expectIdRefused = (res: { status: number; body: any }) => {
    expect(res.status, JSON.stringify(res.body)).toBe(400)
    expect(res.body).toEqual({
      name: 'BadRequest', message: 'Validation failed', code: 400, className: 'bad-request',
      errors: { id: 'must be a record id: a whole number between 1 and 2147483647' }
    })
  }

  it('when a company is patched or deleted by a malformed id while a webhook subscription is active, then 400 naming the id (not a 500), and the next write works', async () => {
    const company = await t.http().post('/companies').set(acme.key).send({ name: 'Initech' })
    expect(company.status).toBe(201)
    for (const id of ['abc', '1.5', '-1', '0', '99999999999']) {
      expectIdRefused(await t.http().patch(`/companies/${id}`).set(acme.key).send({ name: 'Renamed' }))
      expectIdRefused(await t.http().delete(`/companies/${id}`).set(acme.key))
    }
    const renamed = await t.http().patch(`/companies/${company.body.id}`).set(acme.key).send({ name: 'Initrode' })
    expect(renamed.status).toBe(200)
    expect((await t.http().get(`/companies/${company.body.id}`).set(acme.key)).body.name).toBe('Initrode')
  })

  it('when the write carries an Idempotency-Key, then a malformed id is the same 400 and the key is free again', async () => {
    const key = `malformed-${crypto.randomUUID()}`
    expectIdRefused(await t.http().patch('/companies/abc').set(acme.key).set('Idempotency-Key', key).send({ name: 'Renamed' }))
    expect(await t.db('idempotency_keys').where({ key }).first()).toBeUndefined()
  })

  it('when a statement fails inside a transaction and was caught, then the transaction fails with that error, not with "current transaction is aborted"', async () => {
    const failing = inTransaction(t.db, async ({ transaction: { trx } }) => {
      await trx.raw("SELECT 'abc'::integer").catch(() => undefined)
      await trx.raw('SELECT 1')
    })
    await expect(failing).rejects.toMatchObject({ code: '22P02' })
    expect(shapeError(await failing.catch((error) => error)).toJSON()).toMatchObject({ name: 'BadRequest', code: 400 })
  })
})
