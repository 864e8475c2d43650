import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, allowingPrivateAddresses } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, bookableLink, created, inDays } from '../reservations/fixtures.js'
import { connectWebchat } from '../channels/fixtures.js'

const newKey = () => `key-${crypto.randomUUID()}`
const SECRET_WITHHELD = 'The request with this Idempotency-Key succeeded, but its answer held a secret that is shown only once and is not kept, so it cannot be replayed'

/**
 * An Idempotency-Key belongs to its caller: nobody else in the organization replays its answer
 * (a new API key, a rotated webhook secret) or takes the key first, and no stored answer holds a
 * secret. docs/integrations.md, "Idempotent requests".
 */
describe('Idempotency-Key: whose key it is', () => {
  let t: TestApp
  let acme: Tenant
  let member: Awaited<ReturnType<typeof addMember>>
  let readOnly: Record<string, string>
  beforeAll(async () => {
    t = await startApp({ publicRateLimitPoints: 1000 })
    acme = await createTenant(t, 'Acme')
    member = await addMember(t, acme, 'member')
    const key = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'reader', scopes: ['read'] })
    expect(key.status).toBe(201)
    readOnly = { 'x-api-key': key.body.key }
  })
  afterAll(async () => {
    await t.close()
  })

  /** Every stored row of a key, as the text a reader of the table sees. */
  const storedText = async (key: string) => JSON.stringify(await t.db('idempotency_keys').where({ key }))

  it("when a member and a read-only key repeat the owner's POST /api-keys with its Idempotency-Key, then each gets its own 403, never the key; the row holds no key; the owner's own repeat is a 409", async () => {
    const key = newKey()
    const body = { organization_id: acme.organization.id, name: `deploy-${key}` }
    const first = await t.http().post('/api-keys').set(acme.bearer).set('Idempotency-Key', key).send(body)
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const secret: string = first.body.key

    for (const headers of [member.bearer, readOnly]) {
      const repeat = await t.http().post('/api-keys').set(headers).set('Idempotency-Key', key).send(body)
      expect(repeat.status, JSON.stringify(repeat.body)).toBe(403)
      expect(repeat.body).toMatchObject({ name: 'Forbidden', code: 403, className: 'forbidden' })
      expect(repeat.headers['idempotent-replayed']).toBeUndefined()
      expect(JSON.stringify(repeat.body)).not.toContain(secret)
    }
    expect(await storedText(key)).not.toContain(secret)

    const own = await t.http().post('/api-keys').set(acme.bearer).set('Idempotency-Key', key).send(body)
    expect(own.status).toBe(409)
    expect(own.body).toMatchObject({ name: 'Conflict', message: SECRET_WITHHELD, errors: { idempotency_key: expect.any(String) } })
    expect(JSON.stringify(own.body)).not.toContain(secret)
    expect(await t.db('api_keys').where({ organization_id: acme.organization.id, name: body.name })).toHaveLength(1)
  })

  it("when a member and a read-only key repeat the owner's rotate-secret with its Idempotency-Key, then 403, never the secret; the row holds none; the owner's repeat does not rotate again", async () => {
    const subscription = await allowingPrivateAddresses(t, () => created(t, acme, '/webhook-subscriptions', { url: 'http://127.0.0.1:9/hooks', events: ['contacts.created'] }))
    const key = newKey()
    const rotate = (headers: Record<string, string>) => t.http().post(`/webhook-subscriptions/${subscription.id}`).set(headers)
      .set('X-Service-Method', 'rotate-secret').set('Idempotency-Key', key).send({ organization_id: acme.organization.id })
    const first = await rotate(acme.bearer)
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    const secret: string = first.body.secret
    expect(secret).toMatch(/^whsec_/)

    for (const headers of [member.bearer, readOnly]) {
      const repeat = await rotate(headers)
      expect(repeat.status, JSON.stringify(repeat.body)).toBe(403)
      expect(JSON.stringify(repeat.body)).not.toContain(secret)
    }
    expect(await storedText(key)).not.toContain(secret)
    const own = await rotate(acme.bearer)
    expect(own.status).toBe(409)
    expect(own.body.message).toBe(SECRET_WITHHELD)
    expect((await t.db('webhook_subscriptions').where({ id: subscription.id }).first()).secret).toBe(secret)
  })

  it('when the answer of a subscription or an invitation carried its secret, then the stored row holds none and a repeat is the 409', async () => {
    const subscriptionKey = newKey()
    const subscription = await allowingPrivateAddresses(t, () => t.http().post('/webhook-subscriptions').set(acme.key).set('Idempotency-Key', subscriptionKey)
      .send({ url: 'http://127.0.0.1:9/hooks', events: ['*'] }))
    expect(subscription.status).toBe(201)
    const invitationKey = newKey()
    const inviteBody = { organization_id: acme.organization.id, email: `heir-${crypto.randomUUID().slice(0, 8)}@example.test`, role: 'owner' }
    const invitation = await t.http().post('/organizations-users-invites').set(acme.bearer).set('Idempotency-Key', invitationKey).send(inviteBody)
    expect(invitation.status, JSON.stringify(invitation.body)).toBe(201)

    expect(await storedText(subscriptionKey)).not.toContain(subscription.body.secret)
    expect(await storedText(invitationKey)).not.toContain(invitation.body.token)
    const [row] = await t.db('idempotency_keys').where({ key: invitationKey })
    expect(row).toMatchObject({ status: 'done', status_code: 201, response_body: null, secrets_withheld: true })
    const again = await t.http().post('/organizations-users-invites').set(acme.bearer).set('Idempotency-Key', invitationKey).send(inviteBody)
    expect(again.status).toBe(409)
    expect(await t.db('organizations_users_invites').where({ organization_id: acme.organization.id, email: inviteBody.email })).toHaveLength(1)
  })

  it("when a member uses a key first, then the owner's request with that key still runs: nobody else can take a caller's key", async () => {
    const key = newKey()
    const taken = await t.http().post('/contacts').set(member.bearer).set('Idempotency-Key', key).send({ organization_id: acme.organization.id, first_name: 'Squatter' })
    expect(taken.status).toBe(201)
    const mine = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Owner' })
    expect(mine.status, JSON.stringify(mine.body)).toBe(201)
    expect(mine.headers['idempotent-replayed']).toBeUndefined()
    expect(mine.body.first_name).toBe('Owner')
  })

  it("when the caller's role or the key's scopes changed since the first request, then the repeat is a 403 and nothing is replayed", async () => {
    const admin = await addMember(t, acme, 'admin')
    const subscription = await allowingPrivateAddresses(t, () => created(t, acme, '/webhook-subscriptions', { url: 'http://127.0.0.1:9/hooks', events: ['contacts.created'] }))
    const key = newKey()
    const patch = () => t.http().patch(`/webhook-subscriptions/${subscription.id}`).query({ organization_id: acme.organization.id })
      .set(admin.bearer).set('Idempotency-Key', key).send({ description: 'by the admin' })
    expect((await patch()).status).toBe(200)
    await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: admin.user.id }).update({ role: 'member' })
    const demoted = await patch()
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(403)
    expect(demoted.headers['idempotent-replayed']).toBeUndefined()

    const writer = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'writer' })
    const contactKey = newKey()
    const create = () => t.http().post('/contacts').set({ 'x-api-key': writer.body.key }).set('Idempotency-Key', contactKey).send({ first_name: 'Scoped' })
    expect((await create()).status).toBe(201)
    expect((await t.http().patch(`/api-keys/${writer.body.id}`).set(acme.bearer).send({ scopes: ['read'] })).status).toBe(200)
    const narrowed = await create()
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(403)
    expect(narrowed.body).not.toHaveProperty('id')
  })

  describe('without credentials', () => {
    it("when a stranger repeats a visitor's public booking with its key and body, then a 409 without the manage token, and one reservation", async () => {
      const { service, slug } = await bookableLink(t, acme, `strangers-${acme.organization.id}`)
      const key = newKey()
      const body = { service_id: service.id, start_datetime: at(inDays(3), '10:00'), contact: { first_name: 'Jo', email: `jo-${key}@example.test` } }
      const first = await t.http().post(`/public/booking-links/${slug}/reservations`).set('Idempotency-Key', key).send(body)
      expect(first.status, JSON.stringify(first.body)).toBe(201)
      const { manage_token: manageToken } = first.body
      const stranger = await t.http().post(`/public/booking-links/${slug}/reservations`).set('Idempotency-Key', key).send(body)
      expect(stranger.status).toBe(409)
      expect(stranger.body.message).toBe(SECRET_WITHHELD)
      expect(JSON.stringify(stranger.body)).not.toContain(manageToken)
      expect(await storedText(key)).not.toContain(manageToken)
      expect(await t.db('reservations').where({ organization_id: acme.organization.id, service_id: service.id }).whereNull('deleted_at')).toHaveLength(1)

      // The manage link's token is in the path of the cancellation: the row keeps the path redacted.
      const cancelKey = newKey()
      const cancelled = await t.http().post(`/public/reservations/${manageToken}/cancel`).set('Idempotency-Key', cancelKey).send({})
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(201)
      expect(await storedText(cancelKey)).not.toContain(manageToken)
      const repeated = await t.http().post(`/public/reservations/${manageToken}/cancel`).set('Idempotency-Key', cancelKey).send({})
      expect(repeated.headers['idempotent-replayed']).toBe('true')
      const elsewhere = await t.http().post(`/public/reservations/${'x'.repeat(32)}/cancel`).set('Idempotency-Key', cancelKey).send({})
      expect(elsewhere.status).toBe(422)
    })

    it('when a request without credentials carries a key shorter than 32 characters, then 400 with errors.idempotency_key and nothing is written', async () => {
      const email = `short-${crypto.randomUUID().slice(0, 8)}@example.test`
      const res = await t.http().post('/users').set('Idempotency-Key', 'retry-1').send({ email, password: 'correct horse battery', first_name: 'Sho' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ idempotency_key: 'must be at least 32 characters on a request without credentials (a random UUID)' })
      expect(await t.db('users').where({ email }).first()).toBeUndefined()
    })

    it("when a web-chat session is opened with a key, then its visitor token is not kept; another visitor's message with a visitor's key is their own", async () => {
      const widget = await connectWebchat(t, acme)
      const key = newKey()
      const open = () => t.http().post(`/public/webchat/${widget.widget_token}/sessions`).set('Idempotency-Key', key).send({ name: 'Ada' })
      const first = await open()
      expect(first.status, JSON.stringify(first.body)).toBe(201)
      expect(await storedText(key)).not.toContain(first.body.visitor_token)
      const again = await open()
      expect(again.status).toBe(409)
      expect(JSON.stringify(again.body)).not.toContain(first.body.visitor_token)

      const other = await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({ name: 'Grace' })
      const messageKey = newKey()
      const say = (visitorToken: string) => t.http().post('/public/webchat/messages').set('X-Visitor-Token', visitorToken).set('Idempotency-Key', messageKey).send({ content: 'Hello' })
      const mine = await say(first.body.visitor_token)
      expect(mine.status, JSON.stringify(mine.body)).toBe(201)
      const theirs = await say(other.body.visitor_token)
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(201)
      expect(theirs.headers['idempotent-replayed']).toBeUndefined()
      expect(theirs.body.id).not.toBe(mine.body.id)
      const retried = await say(first.body.visitor_token)
      expect(retried.headers['idempotent-replayed']).toBe('true')
      expect(retried.body.id).toBe(mine.body.id)
    })
  })
})
