import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { FORBIDDEN_MESSAGE } from '../../src/hooks/tenant-scope.js'

/** Credential mistakes answer with what to fix, in the spec's error shape. */
describe('errors that name the fix', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  it('when an API key is sent as a bearer token, then 401 saying that API keys go in the x-api-key header', async () => {
    const res = await t.http().get('/contacts').set('Authorization', `Bearer ${acme.key['x-api-key']}`)
    expect(res.status).toBe(401)
    expect(res.body).toMatchObject({ name: 'NotAuthenticated', code: 401, className: 'not-authenticated' })
    expect(res.body.message).toMatch(/^Invalid API key: API keys go in the x-api-key header/)
    expect(res.body.message).not.toContain(acme.key['x-api-key'])
  })

  it('when a bearer token is neither a JWT nor one of our keys, then 401 without the key hint', async () => {
    const res = await t.http().get('/contacts').set('Authorization', 'Bearer not-a-token')
    expect(res.status).toBe(401)
    expect(res.body.message).not.toMatch(/x-api-key/)
  })

  it("when an API-key caller names another organization_id, then 403 with the spec's sentence and the key's own organization", async () => {
    const list = await t.http().get('/contacts').set(acme.key).query({ organization_id: other.organization.id })
    const create = await t.http().post('/contacts').set(acme.key).send({ organization_id: other.organization.id, first_name: 'X' })
    for (const res of [list, create]) {
      expect(res.status).toBe(403)
      expect(res.body).toMatchObject({ name: 'Forbidden', code: 403, className: 'forbidden' })
      expect(res.body.message.startsWith(FORBIDDEN_MESSAGE)).toBe(true)
      expect(res.body.message).toContain(`This API key belongs to organization ${acme.organization.id}`)
    }
    expect(await t.db('contacts').where({ organization_id: other.organization.id, first_name: 'X' }).first()).toBeUndefined()
  })

  it("when a JWT caller names an organization they are not a member of, then 403 with the spec's sentence and no other organization's id", async () => {
    const res = await t.http().get('/contacts').set(acme.bearer).query({ organization_id: other.organization.id })
    expect(res.status).toBe(403)
    expect(res.body.message.startsWith(FORBIDDEN_MESSAGE)).toBe(true)
    expect(res.body.message).toMatch(/organizations you belong to/)
    expect(res.body.message).not.toContain(`organization ${other.organization.id}`)
  })

  it('when a record is sent with PUT, then 405 naming PATCH, in the spec\'s error shape', async () => {
    const contact = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Put' })).body
    const res = await t.http().put(`/contacts/${contact.id}`).set(acme.key).send({ first_name: 'Replaced' })
    expect(res.status).toBe(405)
    expect(res.body).toEqual({ name: 'MethodNotAllowed', message: 'PUT is not supported: use PATCH for partial updates', code: 405, className: 'method-not-allowed' })
    expect((await t.http().get(`/contacts/${contact.id}`).set(acme.key)).body.first_name).toBe('Put')
  })
})
