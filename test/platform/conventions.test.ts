import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { BadRequest } from '@feathersjs/errors'
import { shapeError } from '../../src/hooks/errors.js'

describe('conventions shared by every service', () => {
  let t: TestApp
  let acme: Tenant
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t)
  })
  afterAll(async () => {
    await t.close()
  })

  it('when GET /health is called and the database answers, then 200 {status: ok}', async () => {
    const res = await t.http().get('/health')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'ok' })
  })

  it('when the body is malformed JSON, then 400 BadRequest in the error shape and nothing is written', async () => {
    const res = await t.http().post('/companies').set(acme.key).set('Content-Type', 'application/json').send('{"name": "Broken",')
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
    expect(await t.db('companies').where({ name: 'Broken' }).first()).toBeUndefined()
  })

  it('when a route does not exist, then 404 NotFound in the error shape', async () => {
    const res = await t.http().get('/no-such-thing').set(acme.key)
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ name: 'NotFound', code: 404, className: 'not-found' })
  })

  it('when a GET body is not of the form {query: {...}}, then 400', async () => {
    const res = await t.http().get('/companies').set(acme.key).send({ name: 'x' })
    expect(res.status).toBe(400)
    expect(res.body.message).toMatch(/query/)
  })

  it('when a method is not offered (PUT), then 405 MethodNotAllowed', async () => {
    const created = await t.http().post('/companies').set(acme.key).send({ name: 'Put target' })
    const res = await t.http().put(`/companies/${created.body.id}`).set(acme.key).send({ name: 'Replaced' })
    expect(res.status).toBe(405)
    expect(res.body.name).toBe('MethodNotAllowed')
  })

  it('when X-Service-Method names an unknown method, then an error and no write', async () => {
    const res = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'destroyEverything').send({ name: 'Nope' })
    expect(res.status).toBe(405)
    expect(await t.db('companies').where({ name: 'Nope' }).first()).toBeUndefined()
  })

  it('when an id is not a number, then 404 or 400 — never 500', async () => {
    const res = await t.http().get('/companies/abc').set(acme.key)
    expect([400, 404]).toContain(res.status)
  })

  it('when a value overflows a database column, then 400 without SQL in the body', async () => {
    const res = await t.http().get('/companies/99999999999').set(acme.key)
    expect([400, 404]).toContain(res.status)
    expect(JSON.stringify(res.body)).not.toMatch(/select|from|where/i)
  })

  it('when an unexpected error happens, then the client sees 500 GeneralError with no internals', () => {
    const error = shapeError(new Error('connect ECONNREFUSED 10.0.0.1:5432 at Pool.query (/srv/app/node_modules/pg)'))
    expect(error.code).toBe(500)
    expect(error.toJSON()).toMatchObject({ name: 'GeneralError', message: 'Internal server error', className: 'general-error' })
    expect(JSON.stringify(error.toJSON())).not.toMatch(/ECONNREFUSED|node_modules/)
  })

  it('when Postgres reports a unique violation, then it becomes 409 with the field and no SQL', () => {
    const pgError = Object.assign(new Error('insert into "x" - duplicate key value violates unique constraint "users_email_unique"'), {
      code: '23505', detail: 'Key (lower(email))=(a@b.c) already exists.'
    })
    const error = shapeError(pgError)
    expect(error.toJSON()).toMatchObject({ name: 'Conflict', code: 409, errors: { email: 'is already taken' } })
    expect(error.message).not.toMatch(/insert|constraint/)
  })

  it('when the OpenAPI document is requested, then it lists the services with their schemas', async () => {
    const res = await t.http().get('/openapi.json')
    expect(res.status).toBe(200)
    expect(res.body.openapi).toMatch(/^3\./)
    expect(res.body.paths['/companies'].get).toBeDefined()
    expect(res.body.paths['/companies/{id}'].patch).toBeDefined()
    expect(res.body.paths['/companies#search'].post).toBeDefined()
    expect(res.body.components.schemas.Company.properties.name).toBeDefined()
    expect(res.body.components.schemas.CompanyData.required).toContain('name')
    expect(res.body.components.securitySchemes.apiKey).toMatchObject({ in: 'header', name: 'x-api-key' })
  })

  it('when /docs is opened, then a page served from local assets loads the document', async () => {
    const page = await t.http().get('/docs')
    expect(page.status).toBe(200)
    expect(page.text).toContain('/openapi.json')
    expect(page.text).not.toMatch(/https?:\/\//)
    const bundle = await t.http().get('/docs/swagger-ui-bundle.js')
    expect(bundle.status).toBe(200)
  })

  it('when the schema is migrated, then every timestamp column of every table keeps milliseconds (timestamptz(3))', async () => {
    const { rows } = await t.db.raw(
      `SELECT table_name, column_name, datetime_precision FROM information_schema.columns
       WHERE table_schema = current_schema() AND data_type = 'timestamp with time zone'
         AND table_name NOT LIKE 'knex_migrations%' AND datetime_precision <> 3`
    )
    expect(rows).toEqual([])
  })

  it('when a request carries X-Request-Id, then the response echoes it', async () => {
    const res = await t.http().get('/health').set('X-Request-Id', 'trace-123')
    expect(res.headers['x-request-id']).toBe('trace-123')
  })
})

describe('error shaping of resolver failures', () => {
  it('when a resolver fails with a database error, then 500 with no SQL', () => {
    const wrapped = new BadRequest('Error resolving data', { total: { message: 'select * from "secret_table" - relation does not exist' } })
    const shaped = shapeError(wrapped)
    expect(shaped.code).toBe(500)
    expect(JSON.stringify(shaped.toJSON())).not.toMatch(/secret_table/)
  })

  it('when a resolver rejects a value with a client error, then 400 naming the field', () => {
    const wrapped = new BadRequest('Error resolving data', { status: { name: 'BadRequest', code: 400, message: 'cannot move from won to won' } })
    expect(shapeError(wrapped).toJSON()).toMatchObject({ code: 400, errors: { status: 'cannot move from won to won' } })
  })
})
