import crypto from 'node:crypto'
import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { allowingPrivateAddresses } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { pruneIdempotencyKeys } from '../../src/hooks/idempotency.js'
import { at, bookableLink, created, inDays } from '../reservations/fixtures.js'
import { useApp } from '../helpers/use-app.js'

const newKey = () => `key-${crypto.randomUUID()}`

describe('Idempotency-Key on POST and PATCH', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const contactsNamed = async (organizationId: number, email: string) =>
    Number((await t.db('contacts').where({ organization_id: organizationId, email }).count({ n: '*' }))[0].n)

  it('when a create is retried with the same key, then the stored answer is replayed with Idempotent-Replayed: true and one contact exists', async () => {
    const key = newKey()
    const body = { first_name: 'Ada', email: `ada-${key}@example.test` }
    const first = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    expect(first.headers['idempotent-replayed']).toBeUndefined()
    const again = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)
    expect(again.status).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.body).toEqual(first.body)
    expect(await contactsNamed(acme.organization.id, body.email)).toBe(1)
    const stored = await t.db('idempotency_keys').where({ key }).first()
    const apiKey = await t.db('api_keys').where({ organization_id: acme.organization.id, name: 'test key' }).first('id')
    expect(stored).toMatchObject({
      scope: `api-key:${apiKey.id}`, organization_id: acme.organization.id, caller_rights: 'owner', method: 'POST', path: '/contacts',
      status: 'done', status_code: 201, secrets_withheld: false
    })
    expect(stored.response_body).toEqual(first.body)
  })

  it('when the body keys come in another order, then it is the same request and is replayed', async () => {
    const key = newKey()
    const email = `order-${key}@example.test`
    const first = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).set('Content-Type', 'application/json').send(`{"first_name":"Bo","email":"${email}"}`)
    const again = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).set('Content-Type', 'application/json').send(`{"email":"${email}","first_name":"Bo"}`)
    expect(first.status).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.body.id).toBe(first.body.id)
  })

  it('when the same key comes with another body, path or method, then 422 Unprocessable with errors.idempotency_key and nothing is written', async () => {
    const key = newKey()
    const email = `mismatch-${key}@example.test`
    const first = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Cy', email })
    expect(first.status).toBe(201)
    const otherBody = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Cyd', email })
    expect(otherBody.status).toBe(422)
    expect(otherBody.body).toMatchObject({ name: 'Unprocessable', code: 422, className: 'unprocessable', errors: { idempotency_key: expect.any(String) } })
    const otherPath = await t.http().post('/companies').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Cy', email })
    expect(otherPath.status).toBe(422)
    const otherMethod = await t.http().patch(`/contacts/${first.body.id}`).set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Cy', email })
    expect(otherMethod.status).toBe(422)
    expect((await t.http().get(`/contacts/${first.body.id}`).set(acme.key)).body.first_name).toBe('Cy')
    expect(await t.db('companies').where({ organization_id: acme.organization.id }).count({ n: '*' }).then((rows) => Number(rows[0].n))).toBe(0)
  })

  it('when 5 requests with one key arrive at once, then exactly one contact is written and the others are 409 or replays of it', async () => {
    const key = newKey()
    const body = { first_name: 'Di', email: `concurrent-${key}@example.test` }
    const answers = await Promise.all(Array.from({ length: 5 }, () => t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)))
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.every((status) => status === 201 || status === 409), statuses.join()).toBe(true)
    const originals = answers.filter((answer) => answer.status === 201 && !answer.headers['idempotent-replayed'])
    expect(originals).toHaveLength(1)
    for (const replay of answers.filter((answer) => answer.headers['idempotent-replayed'])) expect(replay.body.id).toBe(originals[0].body.id)
    for (const conflict of answers.filter((answer) => answer.status === 409)) expect(conflict.body).toMatchObject({ name: 'Conflict', code: 409 })
    expect(await contactsNamed(acme.organization.id, body.email)).toBe(1)
  })

  it("when another organization sends the same key and body, then it is a different key: each organization gets its own contact", async () => {
    const key = newKey()
    const body = { first_name: 'Eve', email: `shared-${key}@example.test` }
    const mine = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)
    const theirs = await t.http().post('/contacts').set(globex.key).set('Idempotency-Key', key).send(body)
    expect([mine.status, theirs.status]).toEqual([201, 201])
    expect(theirs.headers['idempotent-replayed']).toBeUndefined()
    expect(theirs.body.organization_id).toBe(globex.organization.id)
    expect(await contactsNamed(acme.organization.id, body.email)).toBe(1)
    expect(await contactsNamed(globex.organization.id, body.email)).toBe(1)
  })

  it('when a person (bearer JWT) repeats a create naming the organization, then the key is the person\'s, with their role there, and is replayed', async () => {
    const key = newKey()
    const body = { organization_id: acme.organization.id, first_name: 'Flo', email: `jwt-${key}@example.test` }
    const first = await t.http().post('/contacts').set(acme.bearer).set('Idempotency-Key', key).send(body)
    const again = await t.http().post('/contacts').set(acme.bearer).set('Idempotency-Key', key).send(body)
    expect(first.status).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(await t.db('idempotency_keys').where({ key }).first()).toMatchObject({ scope: `user:${acme.user.id}`, organization_id: acme.organization.id, caller_rights: 'owner' })
  })

  it('when a PATCH is replayed, then it writes nothing: updated_at stays that of the first answer', async () => {
    const contact = await created(t, acme, '/contacts', { first_name: 'Gil' })
    const key = newKey()
    const first = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).set('Idempotency-Key', key).send({ last_name: 'Moss' })
    expect(first.status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const again = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).set('Idempotency-Key', key).send({ last_name: 'Moss' })
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.body).toEqual(first.body)
    expect((await t.http().get(`/contacts/${contact.id}`).set(acme.key)).body.updated_at).toBe(first.body.updated_at)
  })

  it('when the first request fails, then the key is released and the corrected request runs', async () => {
    const key = newKey()
    const invalid = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ email: 'not an e-mail' })
    expect(invalid.status).toBe(400)
    const email = `fixed-${key}@example.test`
    const fixed = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Hal', email })
    expect(fixed.status).toBe(201)
    expect(fixed.headers['idempotent-replayed']).toBeUndefined()
    expect(await contactsNamed(acme.organization.id, email)).toBe(1)
  })

  it('when a login carries an Idempotency-Key, then the key is ignored and no answer (a token) is kept', async () => {
    const key = newKey()
    const login = await t.http().post('/authentication').set('Idempotency-Key', key).send({ strategy: 'local', email: acme.user.email, password: acme.password })
    expect(login.status).toBe(201)
    expect(login.headers['idempotent-replayed']).toBeUndefined()
    expect(await t.db('idempotency_keys').where({ key }).first()).toBeUndefined()
  })

  it('when the key is empty, longer than 255 characters or not printable, then 400 with errors.idempotency_key', async () => {
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'ünïcode']) {
      const res = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Ivy' })
      expect(res.status, key).toBe(400)
      expect(res.body.errors).toEqual({ idempotency_key: 'must be 1 to 255 printable characters' })
    }
    const longest = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', 'k'.repeat(255)).send({ first_name: 'Ivy' })
    expect(longest.status).toBe(201)
  })

  it('when a custom method (X-Service-Method) is retried, then it runs once: rotate-secret keeps the secret of its first answer, which is not replayed', async () => {
    const subscription = await allowingPrivateAddresses(t, () => created(t, acme, '/webhook-subscriptions', { url: 'http://127.0.0.1:9/hooks', events: ['contacts.created'] }))
    const key = newKey()
    const rotate = () => t.http().post(`/webhook-subscriptions/${subscription.id}`).set(acme.key).set('X-Service-Method', 'rotate-secret').set('Idempotency-Key', key).send({})
    const first = await rotate()
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body.secret).not.toBe(subscription.secret)
    const again = await rotate()
    expect(again.status).toBe(409)
    expect(again.body).not.toHaveProperty('secret')
    expect((await t.db('webhook_subscriptions').where({ id: subscription.id }).first()).secret).toBe(first.body.secret)
  })

  it('when a public booking is retried with the same key, then one reservation is booked; the answer held the manage token, so the retry is a 409', async () => {
    const { service, slug } = await bookableLink(t, acme, `spa-${acme.organization.id}`)
    const key = newKey()
    const body = { service_id: service.id, start_datetime: at(inDays(3), '10:00'), contact: { first_name: 'Jo', email: `jo-${key}@example.test` } }
    const first = await t.http().post(`/public/booking-links/${slug}/reservations`).set('Idempotency-Key', key).send(body)
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const again = await t.http().post(`/public/booking-links/${slug}/reservations`).set('Idempotency-Key', key).send(body)
    expect(again.status).toBe(409)
    expect(again.body).not.toHaveProperty('manage_token')
    const booked = await t.db('reservations').where({ organization_id: acme.organization.id, service_id: service.id }).whereNull('deleted_at')
    expect(booked).toHaveLength(1)
  })

  it('when an assistant retries create_reservation with the same key, then it books once', async () => {
    const { service } = await bookableLink(t, acme, `assistant-${acme.organization.id}`)
    const assistant = await created(t, acme, '/ai-assistants', { name: 'Desk', internal_tools: { tools: { create_reservation: { enabled: true } } } })
    const person = await created(t, acme, '/contacts', { first_name: 'Lee' })
    const key = newKey()
    const body = { assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: service.id, contact_id: person.id, start_datetime: at(inDays(4), '11:00') } }
    const first = await t.http().post('/ai-assistant-tool-calls').set(acme.key).set('Idempotency-Key', key).send(body)
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const again = await t.http().post('/ai-assistant-tool-calls').set(acme.key).set('Idempotency-Key', key).send(body)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.body).toEqual(first.body)
    expect(await t.db('reservations').where({ organization_id: acme.organization.id, contact_id: person.id }).whereNull('deleted_at')).toHaveLength(1)
  })

  it('when the OpenAPI document is read, then every POST and PATCH offers Idempotency-Key and documents 409, 422 and Idempotent-Replayed', async () => {
    const { body: document } = await t.http().get('/openapi.json')
    const operations = Object.entries(document.paths)
      .filter(([location]) => location !== '/authentication' && location !== '/mcp')
      .flatMap(([, item]: [string, any]) => ['post', 'patch'].map((method) => item[method]).filter(Boolean))
    expect(document.paths['/authentication'].post.parameters ?? []).toEqual([])
    expect(operations.length).toBeGreaterThan(50)
    for (const operation of operations) {
      expect(operation.parameters.map((parameter: any) => parameter.name)).toContain('Idempotency-Key')
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['409', '422']))
    }
    expect(document.paths['/contacts'].post.responses['201'].headers).toHaveProperty('Idempotent-Replayed')
    const rotate = document.paths['/webhook-subscriptions/{id}#rotate-secret'].post
    expect(rotate.parameters.map((parameter: any) => parameter.name)).toEqual(['id', 'X-Service-Method', 'Idempotency-Key'])
    expect(document.paths['/webhook-deliveries/{id}#redeliver'].post.responses).toHaveProperty('404')
  })

  it('when a key has expired, then it is pruned and the same key runs a new request', async () => {
    const key = newKey()
    const body = { first_name: 'Kai', email: `expired-${key}@example.test` }
    const first = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)
    await t.db('idempotency_keys').where({ key }).update({ expires_at: new Date(Date.now() - 1000) })
    expect(await pruneIdempotencyKeys(t.db)).toBeGreaterThanOrEqual(1)
    expect(await t.db('idempotency_keys').where({ key }).first()).toBeUndefined()
    const again = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send(body)
    expect(again.status).toBe(201)
    expect(again.body.id).not.toBe(first.body.id)
    const stored = await t.db('idempotency_keys').where({ key }).first()
    expect(new Date(stored.expires_at).getTime() - Date.now()).toBeGreaterThan((t.app.get('idempotencyTtlS') - 60) * 1000)
  })
})
