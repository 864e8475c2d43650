import crypto from 'node:crypto'
import dns from 'node:dns'
import os from 'node:os'
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest'
import { Webhook } from 'standardwebhooks'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, bookableLink, created, inDays } from '../reservations/fixtures.js'
import { startReceiver } from './receiver.js'
import { isPrivateAddress } from '../../src/webhooks/addresses.js'
import { up as stripInvitationTokens } from '../../migrations/20261127020100_invitation_event_tokens.js'
import type { Receiver, ReceivedRequest } from './receiver.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
// Generous: the receiver shares this process's event loop with the embedded database.
const TIMEOUT_MS = 1000

describe('outbound webhooks', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let receiver: Receiver
  beforeAll(async () => {
    t = await startApp({ webhookAllowPrivate: true, webhookRetryBaseMs: 20, webhookTimeoutMs: TIMEOUT_MS, webhookMaxAttempts: 5 })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver.close()
    await t.close()
  })
  beforeEach(async () => {
    // Each test starts with no subscriptions, so that events of one test never reach the next.
    // Across organizations: the background pool (on Citus the requests' pool refuses multi-shard statements).
    await t.app.get('backgroundKnex')('webhook_subscriptions').update({ deleted_at: t.db.fn.now() })
    t.app.set('webhookAllowPrivate', true)
    receiver.reset()
  })

  /** Runs the outbox until the receiver has `count` requests (retries wait out their short backoff). */
  async function receive(count: number, timeoutMs = 5000) {
    const started = Date.now()
    while (receiver.received.length < count) {
      if (Date.now() - started > timeoutMs) throw new Error(`the receiver got ${receiver.received.length} of ${count} requests`)
      await t.app.get('outbox').deliverDue()
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    return receiver.received.slice(0, count)
  }

  /** Runs the outbox until nothing is due or waiting for a retry. */
  async function drain() {
    for (let i = 0; i < 100; i++) {
      await t.app.get('outbox').deliverDue()
      const waiting = await t.db('outbox_jobs')
        .where({ topic: 'webhook' })
        .whereIn('organization_id', [acme.organization.id, globex.organization.id])
        .whereIn('status', ['pending', 'running'])
        .first('id')
      if (!waiting) return
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error('webhook jobs still waiting')
  }

  /** The one delivery of a subscription, once `ready` holds for it (the worker may still be running the attempt). */
  async function deliveryOnce(subscriptionId: number, ready: (delivery: any) => boolean) {
    for (let i = 0; i < 200; i++) {
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscriptionId })).body.data
      if (delivery && ready(delivery)) return delivery
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`delivery of subscription ${subscriptionId} never became ready`)
  }

  const subscribe = async (tenant: Tenant, body: Record<string, unknown>) => {
    const res = await t.http().post('/webhook-subscriptions').set(tenant.key).send({ url: receiver.url(), events: ['*'], ...body })
    if (res.status !== 201) throw new Error(`subscribe → ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }

  const verify = (secret: string, request: ReceivedRequest) => new Webhook(secret).verify(request.body, request.headers) as any

  describe('/webhook-subscriptions', () => {
    it('when an owner creates a subscription, then 201 with a whsec_ secret of 32 bytes; reads never show the secret again', async () => {
      const res = await t.http().post('/webhook-subscriptions').set(acme.key).send({ url: receiver.url(), events: ['contacts.created', 'deals.updated'], description: 'CRM sync' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, url: receiver.url(), events: ['contacts.created', 'deals.updated'],
        is_active: true, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), description: 'CRM sync', failing_since: null,
        created_by_user_id: acme.user.id, created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      expect(Buffer.from(res.body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32)
      const read = await t.http().get(`/webhook-subscriptions/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).not.toHaveProperty('secret')
      const list = await t.http().get('/webhook-subscriptions').set(acme.key)
      expect(list.body.data.map((s: any) => s.id)).toContain(res.body.id)
      for (const subscription of list.body.data) expect(subscription).not.toHaveProperty('secret')
      const patched = await t.http().patch(`/webhook-subscriptions/${res.body.id}`).set(acme.key).send({ events: ['*'] })
      expect(patched.body).toMatchObject({ events: ['*'] })
      expect(patched.body).not.toHaveProperty('secret')
    })

    it('when the url or the events are wrong, then 400 with the field', async () => {
      const bad = async (body: Record<string, unknown>) => (await t.http().post('/webhook-subscriptions').set(acme.key).send({ url: receiver.url(), events: ['*'], ...body })).body
      expect((await bad({ url: 'ftp://example.com/hooks' })).errors).toHaveProperty('url')
      expect((await bad({ url: 'https://user:pass@example.com/hooks' })).errors).toEqual({ url: 'must not carry a user name or password' })
      expect(Object.keys((await bad({ events: ['contacts.exploded'] })).errors)).toEqual(['events.0'])
      expect((await bad({ events: [] })).errors).toHaveProperty('events')
      expect((await bad({ secret: 'whsec_mine' })).errors).toHaveProperty('secret')
    })

    it('when the service runs in production, then a subscription needs an https:// url', async () => {
      const previous = process.env.NODE_ENV
      process.env.NODE_ENV = 'production'
      try {
        const res = await t.http().post('/webhook-subscriptions').set(acme.key).send({ url: 'http://example.com/hooks', events: ['*'] })
        expect(res.status).toBe(400)
        expect(res.body.errors).toEqual({ url: 'must be an https:// URL' })
        expect((await t.http().post('/webhook-subscriptions').set(acme.key).send({ url: 'https://example.com/hooks', events: ['*'] })).status).toBe(201)
      } finally {
        process.env.NODE_ENV = previous
      }
    })

    it('when a member (not owner or admin) calls, then 403', async () => {
      const member = await addMember(t, acme, 'member')
      const res = await t.http().get('/webhook-subscriptions').set(member.bearer).query({ organization_id: acme.organization.id })
      expect(res.status).toBe(403)
      const create = await t.http().post('/webhook-subscriptions').set(member.bearer).send({ organization_id: acme.organization.id, url: receiver.url(), events: ['*'] })
      expect(create.status).toBe(403)
    })
  })

  describe('delivery', () => {
    it('when a contact is created, then the receiver gets a contacts.created signed as Standard Webhooks say, with the contact as the API returns it', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      const contact = await created(t, acme, '/contacts', { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.test' })
      const [request] = await receive(1)
      expect(request.path).toBe('/hooks')
      expect(request.headers['content-type']).toBe('application/json')
      expect(request.headers['webhook-timestamp']).toMatch(/^\d+$/)
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60)
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
      const event = verify(subscription.secret, request)
      expect(event).toEqual({
        id: request.headers['webhook-id'], type: 'contacts.created', created_at: expect.stringMatching(ISO_MS), organization_id: acme.organization.id,
        data: { object: (await t.http().get(`/contacts/${contact.id}`).set(acme.key)).body }
      })
      // The signature is HMAC-SHA256 of "id.timestamp.body" keyed with the secret's decoded bytes.
      const key = Buffer.from(subscription.secret.slice('whsec_'.length), 'base64')
      const expected = crypto.createHmac('sha256', key).update(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`).digest('base64')
      expect(request.headers['webhook-signature']).toBe(`v1,${expected}`)
      expect(() => new Webhook(`whsec_${crypto.randomBytes(32).toString('base64')}`).verify(request.body, request.headers)).toThrow()

      const deliveries = await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })
      expect(deliveries.status).toBe(200)
      expect(deliveries.body.data).toEqual([{
        id: expect.any(Number), organization_id: acme.organization.id, subscription_id: subscription.id, event_id: event.id, type: 'contacts.created',
        status: 'delivered', attempts: 1, last_status_code: 200, last_error: null, next_attempt_at: null, delivered_at: expect.stringMatching(ISO_MS),
        payload: event, created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS)
      }])
    })

    it('when a contact is updated and deleted, then contacts.updated carries previous_attributes and contacts.deleted the deleted record', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.updated', 'contacts.deleted'] })
      const contact = await created(t, acme, '/contacts', { first_name: 'Bea', last_name: 'Old', email: 'bea@example.test' })
      const patched = await t.http().patch(`/contacts/${contact.id}`).set(acme.key).send({ last_name: 'New', phone: '+34 600 111 222' })
      expect(patched.status).toBe(200)
      const removed = await t.http().delete(`/contacts/${contact.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      const [updated, deleted] = (await receive(2)).map((request) => verify(subscription.secret, request))
      expect(updated.type).toBe('contacts.updated')
      expect(updated.data.object).toEqual(patched.body)
      expect(updated.data.previous_attributes).toEqual({ last_name: 'Old', phone: null, phone_e164: null })
      expect(deleted.type).toBe('contacts.deleted')
      expect(deleted.data).toEqual({ object: removed.body })
      expect(deleted.data.object.deleted_at).toMatch(ISO_MS)
    })

    it('when the receiver answers 500, then the event is retried with the same webhook-id and delivered', async () => {
      const subscription = await subscribe(acme, { events: ['companies.created'] })
      receiver.answer({ status: 500 })
      await created(t, acme, '/companies', { name: 'Retry Ltd' })
      const [failed, retried] = await receive(2)
      expect(retried.headers['webhook-id']).toBe(failed.headers['webhook-id'])
      expect(verify(subscription.secret, retried).type).toBe('companies.created')
      await drain()
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data
      expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 200, last_error: null })
    })

    it('when the receiver does not answer in time, then the attempt counts as failed and is retried', async () => {
      const subscription = await subscribe(acme, { events: ['companies.created'] })
      receiver.answer({ status: 200, delayMs: TIMEOUT_MS * 3 })
      await created(t, acme, '/companies', { name: 'Slow Ltd' })
      await receive(1)
      const pending = await deliveryOnce(subscription.id, (delivery) => delivery.attempts === 1)
      expect(pending).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null, last_error: expect.stringContaining('timeout') })
      expect(pending.next_attempt_at).toMatch(ISO_MS)
      const [, retried] = await receive(2)
      expect(retried.headers['webhook-id']).toBe(receiver.received[0].headers['webhook-id'])
      await drain()
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data
      expect(delivery).toMatchObject({ status: 'delivered', attempts: 2 })
    })

    it("when several changes happen and the first delivery fails, then the subscription's events still arrive in the order they happened", async () => {
      const subscription = await subscribe(acme, { events: ['companies.created', 'companies.updated'] })
      receiver.answer({ status: 503 }, { status: 503 })
      const company = await created(t, acme, '/companies', { name: 'First' })
      await t.http().patch(`/companies/${company.id}`).set(acme.key).send({ name: 'Second' })
      await t.http().patch(`/companies/${company.id}`).set(acme.key).send({ name: 'Third' })
      await receive(5)
      await drain()
      const events = receiver.received.map((request) => verify(subscription.secret, request))
      const delivered = events.slice(2)
      expect(events.slice(0, 3).map((event) => event.id)).toEqual([events[0].id, events[0].id, events[0].id])
      expect(delivered.map((event) => [event.type, event.data.object.name])).toEqual([
        ['companies.created', 'First'], ['companies.updated', 'Second'], ['companies.updated', 'Third']
      ])
      expect(delivered[2].data.previous_attributes).toEqual({ name: 'Second' })
    })

    it('when a delivery is redelivered, then the same event (same webhook-id and body) is posted again', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      await created(t, acme, '/contacts', { first_name: 'Cid' })
      const [original] = await receive(1)
      await drain()
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data
      // The repeat is answered slowly, so that the delivery is still pending when it is asked for again.
      receiver.answer({ status: 200, delayMs: 150 })
      const again = await t.http().post(`/webhook-deliveries/${delivery.id}`).set(acme.key).set('X-Service-Method', 'redeliver').send({})
      expect(again.status, JSON.stringify(again.body)).toBe(200)
      expect(again.body).toMatchObject({ id: delivery.id, status: 'pending' })
      const pendingAgain = await t.http().post(`/webhook-deliveries/${delivery.id}`).set(acme.key).set('X-Service-Method', 'redeliver').send({})
      expect(pendingAgain.status).toBe(409)
      const [, repeated] = await receive(2)
      expect(repeated.headers['webhook-id']).toBe(original.headers['webhook-id'])
      expect(repeated.body).toBe(original.body)
      expect(verify(subscription.secret, repeated).type).toBe('contacts.created')
      await drain()
      expect((await t.http().get(`/webhook-deliveries/${delivery.id}`).set(acme.key)).body).toMatchObject({ status: 'delivered', attempts: 2 })
      const noId = await t.http().post('/webhook-deliveries').set(acme.key).set('X-Service-Method', 'redeliver').send({})
      expect(noId.status).toBe(400)
      expect(noId.body.errors).toHaveProperty('id')
    })

    it('when the secret is rotated, then the next event verifies with the new secret only', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      const rotated = await t.http().post(`/webhook-subscriptions/${subscription.id}`).set(acme.key).set('X-Service-Method', 'rotate-secret').send({})
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200)
      expect(rotated.body.secret).toMatch(/^whsec_/)
      expect(rotated.body.secret).not.toBe(subscription.secret)
      await created(t, acme, '/contacts', { first_name: 'Dee' })
      const [request] = await receive(1)
      expect(verify(rotated.body.secret, request).type).toBe('contacts.created')
      expect(() => verify(subscription.secret, request)).toThrow()
    })

    it('when WEBHOOK_ALLOW_PRIVATE is off, then a subscription to a loopback or private address is a 400 naming the setting, at create and at patch, and none is stored', async () => {
      const allowed = await subscribe(acme, { events: ['contacts.created'] })
      t.app.set('webhookAllowPrivate', false)
      const hostname = os.hostname()
      const resolved = (await dns.promises.lookup(hostname, { all: true })).map((entry) => entry.address)
      expect(resolved.some(isPrivateAddress), `${hostname} resolves to ${resolved.join(', ')}: a private address is what this test needs`).toBe(true)
      const urls = [
        receiver.url(), `http://localhost:${receiver.port}/hooks`, 'http://LOCALHOST./hooks', 'http://api.localhost/hooks', 'http://[::1]:8080/hooks',
        'https://10.0.0.7/hooks', 'https://192.168.1.20/hooks', 'http://169.254.169.254/latest', 'http://2130706433/hooks', `http://${hostname}:8080/hooks`
      ]
      for (const url of urls) {
        for (const res of [
          await t.http().post('/webhook-subscriptions').set(acme.key).send({ url, events: ['*'] }),
          await t.http().patch(`/webhook-subscriptions/${allowed.id}`).set(acme.key).send({ url })
        ]) {
          expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(400)
          expect(Object.keys(res.body.errors)).toEqual(['url'])
          expect(res.body.errors.url).toMatch(/^must reach a public address: .* is a loopback or private address, which deliveries refuse while the service runs with WEBHOOK_ALLOW_PRIVATE off \(set WEBHOOK_ALLOW_PRIVATE=true/)
        }
      }
      const stored = await t.db('webhook_subscriptions').where({ organization_id: acme.organization.id }).whereNull('deleted_at')
      expect(stored.map((row) => [row.id, row.url])).toEqual([[allowed.id, allowed.url]])
      // A patch that leaves the URL alone is not checked again; each delivery still is.
      expect((await t.http().patch(`/webhook-subscriptions/${allowed.id}`).set(acme.key).send({ description: 'kept' })).status).toBe(200)
    })

    it('when WEBHOOK_ALLOW_PRIVATE is off and the host is a public address, then the subscription is made', async () => {
      t.app.set('webhookAllowPrivate', false)
      // Inactive: nothing is ever sent to these.
      for (const url of ['https://203.0.114.9/hooks', 'https://[2606:4700:4700::1111]/hooks']) {
        const res = await t.http().post('/webhook-subscriptions').set(acme.key).send({ url, events: ['contacts.created'], is_active: false })
        expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(201)
      }
    })

    it('when the url is 127.0.0.1 or localhost and WEBHOOK_ALLOW_PRIVATE is off, then nothing is posted and the delivery records the refusal', async () => {
      // Made while private addresses were allowed; the setting was turned off since.
      const byAddress = await subscribe(acme, { events: ['contacts.created'] })
      const byName = await subscribe(acme, { events: ['contacts.created'], url: `http://localhost:${receiver.port}/hooks` })
      t.app.set('webhookAllowPrivate', false)
      await created(t, acme, '/contacts', { first_name: 'Eli' })
      await t.app.get('outbox').deliverDue()
      for (const subscription of [byAddress, byName]) {
        const delivery = await deliveryOnce(subscription.id, (candidate) => candidate.attempts >= 1)
        expect(delivery).toMatchObject({ status: 'pending', attempts: expect.any(Number), last_status_code: null, last_error: expect.stringMatching(/^refused: (127\.0\.0\.1|::1) is a loopback, link-local or private address/) })
      }
      expect(receiver.received).toHaveLength(0)
    })

    it('when a delivery fails its last attempt, then it is failed; after three days of failures the subscription is deactivated and its owners are e-mailed', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'], url: receiver.url('/broken') })
      await t.db('webhook_subscriptions').where({ id: subscription.id }).update({ failing_since: new Date(Date.now() - 4 * 24 * 3600 * 1000) })
      receiver.answer(...Array.from({ length: 5 }, () => ({ status: 500 })))
      await created(t, acme, '/contacts', { first_name: 'Flo' })
      await receive(1)
      // The streak is noted once the failed attempt is recorded, right after the receiver answered.
      for (let i = 0; i < 200 && (await t.db('webhook_subscriptions').where({ id: subscription.id }).first()).is_active; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      const stored = await t.db('webhook_subscriptions').where({ id: subscription.id }).first()
      expect(stored.is_active).toBe(false)
      const mails = await t.db('outbox_jobs').where({ topic: 'mail', kind: 'webhook-deactivated', organization_id: acme.organization.id })
      expect(mails.map((job) => job.payload.to)).toEqual([acme.user.email])
      expect(mails[0].payload.text).toContain(receiver.url('/broken'))
      await drain()
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data
      expect(delivery).toMatchObject({ status: 'failed', last_error: 'the subscription is inactive or deleted' })
      expect(receiver.received).toHaveLength(1)
    })

    it('when a delivery keeps failing, then after WEBHOOK_MAX_ATTEMPTS it is failed with the last answer', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      receiver.answer(...Array.from({ length: 5 }, () => ({ status: 502 })))
      await created(t, acme, '/contacts', { first_name: 'Gus' })
      await receive(5)
      await drain()
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data
      expect(delivery).toMatchObject({ status: 'failed', attempts: 5, last_status_code: 502, last_error: 'the receiver answered 502', next_attempt_at: null })
      expect((await t.db('webhook_subscriptions').where({ id: subscription.id }).first()).failing_since).not.toBeNull()
    })
  })

  describe('events of every resource, in the transaction of the change', () => {
    it("when records of several resources change under a '*' subscription, then each change is one event of its resource", async () => {
      const subscription = await subscribe(acme, { events: ['*'] })
      const company = await created(t, acme, '/companies', { name: 'Star Inc' })
      const contact = await created(t, acme, '/contacts', { first_name: 'Hana', company_id: company.id })
      await created(t, acme, '/activities', { subject: 'Call Hana', activity_type: 'call', contact_id: contact.id })
      await created(t, acme, '/conversation-messages-playground', { contact_id: contact.id, content: 'Hello' })
      const invitation = await t.http().post('/organizations-users-invites').set(acme.bearer).send({ organization_id: acme.organization.id, email: 'new@example.test', role: 'member' })
      expect(invitation.status, JSON.stringify(invitation.body)).toBe(201)
      await drain()
      // At least once: an attempt whose answer came late is sent again, so events count once per webhook-id.
      const events = new Map(receiver.received.map((request) => [request.headers['webhook-id'], verify(subscription.secret, request)]))
      const types = [...events.values()].map((event) => event.type)
      expect(types).toEqual([
        'companies.created', 'contacts.created', 'activities.created',
        'conversations.created', 'conversation-messages.created', 'conversations.updated', 'invitations.created'
      ])
      const moved = [...events.values()].find((event) => event.type === 'conversations.updated')
      expect(moved.data.object).toMatchObject({ contact_id: contact.id, last_message_preview: 'Hello' })
      const invited = [...events.values()].find((event) => event.type === 'invitations.created')
      expect(invited.data.object).not.toHaveProperty('token_hash')
    })

    it('when a public booking books a reservation, then reservations.created is sent; a booking refused with 409 sends nothing', async () => {
      const { service, slug } = await bookableLink(t, acme, `hooks-${acme.organization.id}`)
      const subscription = await subscribe(acme, { events: ['reservations.created'] })
      const body = { service_id: service.id, start_datetime: at(inDays(5), '10:00'), contact: { first_name: 'Ivo', email: 'ivo@example.test' } }
      const booked = await t.http().post(`/public/booking-links/${slug}/reservations`).send(body)
      expect(booked.status, JSON.stringify(booked.body)).toBe(201)
      const taken = await t.http().post(`/public/booking-links/${slug}/reservations`).send({ ...body, contact: { first_name: 'Jan', email: 'jan@example.test' } })
      expect(taken.status).toBe(409)
      await drain()
      const events = [...new Map(receiver.received.map((request) => [request.headers['webhook-id'], verify(subscription.secret, request)])).values()]
      expect(events.map((event) => event.type)).toEqual(['reservations.created'])
      const [reservation] = await t.db('reservations').where({ organization_id: acme.organization.id, service_id: service.id })
      expect(events[0].data.object).toMatchObject({ id: reservation.id, service_id: service.id, source: 'booking_link' })
      expect(await t.db('webhook_deliveries').where({ subscription_id: subscription.id }).count({ n: '*' }).then((rows) => Number(rows[0].n))).toBe(1)
    })

    it("when a public booking creates the visitor's contact, then contacts.created is sent with the reservation's event; a returning visitor's booking sends none", async () => {
      const { service, slug } = await bookableLink(t, acme, `hooks-contact-${acme.organization.id}`)
      const subscription = await subscribe(acme, { events: ['contacts.created', 'reservations.created'] })
      const email = `visitor-${crypto.randomUUID().slice(0, 8)}@example.test`
      const book = (day: number) => t.http().post(`/public/booking-links/${slug}/reservations`)
        .send({ service_id: service.id, start_datetime: at(inDays(day), '11:00'), contact: { first_name: 'Lea', email } })
      expect((await book(6)).status).toBe(201)
      expect((await book(7)).status).toBe(201)
      await drain()
      const events = [...new Map(receiver.received.map((request) => [request.headers['webhook-id'], verify(subscription.secret, request)])).values()]
      expect(events.map((event) => event.type)).toEqual(['reservations.created', 'contacts.created', 'reservations.created'])
      expect(events[1].data.object).toMatchObject({ first_name: 'Lea', email, organization_id: acme.organization.id })
      expect(events[0].data.object.contact_id).toBe(events[1].data.object.id)
    })

    it('when activities are completed in bulk (PATCH /activities), then each one changed is an activities.updated event', async () => {
      const made = []
      for (let i = 0; i < 7; i++) made.push(await created(t, acme, '/activities', { subject: `Bulk ${i}`, activity_type: 'call' }))
      const subscription = await subscribe(acme, { events: ['activities.updated'] })
      const complete = (activities: any[]) => t.http().patch('/activities').set(acme.key).send({ ids: activities.map((a) => a.id), done: true })
      for (const batch of [made.slice(0, 1), made.slice(1)]) {
        const res = await complete(batch)
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        expect(res.body.updated).toBe(batch.length)
      }
      await drain()
      const events = [...new Map(receiver.received.map((request) => [request.headers['webhook-id'], verify(subscription.secret, request)])).values()]
      expect(events.map((event) => [event.type, event.data.object.id, event.data.object.done]).sort((a, b) => a[1] - b[1])).toEqual(
        made.map((activity) => ['activities.updated', activity.id, true])
      )
    })

    it('when a create is replayed with its Idempotency-Key, then no second event is sent', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      const key = `hook-${crypto.randomUUID()}`
      for (let i = 0; i < 2; i++) {
        const res = await t.http().post('/contacts').set(acme.key).set('Idempotency-Key', key).send({ first_name: 'Kim' })
        expect(res.status).toBe(201)
      }
      await drain()
      expect(await t.db('webhook_deliveries').where({ subscription_id: subscription.id }).count({ n: '*' }).then((rows) => Number(rows[0].n))).toBe(1)
    })
  })

  describe('secrets', () => {
    it("when an owner invitation is created under a '*' subscription, then neither the posted event, nor the stored delivery, nor the deliveries' answer holds its token", async () => {
      const subscription = await subscribe(acme, { events: ['*'] })
      const invitation = await t.http().post('/organizations-users-invites').set(acme.bearer)
        .send({ organization_id: acme.organization.id, email: `heir-${crypto.randomUUID().slice(0, 8)}@example.test`, role: 'owner' })
      expect(invitation.status, JSON.stringify(invitation.body)).toBe(201)
      const { token } = invitation.body
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const tokenHash = crypto.createHash('sha256').update(token).digest('hex')
      await drain()

      const events = receiver.received.map((request) => verify(subscription.secret, request))
      expect(events.map((event) => event.type)).toEqual(['invitations.created'])
      expect(events[0].data.object).toMatchObject({ id: invitation.body.id, role: 'owner', status: 'pending' })
      expect(events[0].data.object).not.toHaveProperty('token')
      for (const request of receiver.received) {
        expect(request.body).not.toContain(token)
        expect(request.body).not.toContain(tokenHash)
      }
      const stored = await t.db('webhook_deliveries').where({ subscription_id: subscription.id }).select(t.db.raw('payload::text AS text'))
      expect(stored).toHaveLength(1)
      expect(stored[0].text).not.toContain(token)
      const listed = await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })
      expect(listed.body.data).toHaveLength(1)
      expect(JSON.stringify(listed.body)).not.toContain(token)
    })

    it('when deliveries stored before events left secrets out hold an invitation token, then the migration takes the token out and keeps the rest', async () => {
      const subscription = await subscribe(acme, { events: ['invitations.created'] })
      const token = crypto.randomBytes(32).toString('base64url')
      const object = { id: 1, organization_id: acme.organization.id, role: 'owner', status: 'pending', token }
      const payload = { id: `evt_${crypto.randomUUID()}`, type: 'invitations.created', created_at: new Date().toISOString(), organization_id: acme.organization.id, data: { object } }
      const [row] = await t.db('webhook_deliveries')
        .insert({ organization_id: acme.organization.id, subscription_id: subscription.id, event_id: payload.id, type: payload.type, payload: JSON.stringify(payload), status: 'delivered' })
        .returning('id')
      await stripInvitationTokens(t.db)
      const stored = await t.db('webhook_deliveries').where({ id: row.id }).first()
      const { token: _token, ...kept } = object
      expect(stored.payload).toEqual({ ...payload, data: { object: kept } })
    })
  })

  describe('batch writes', () => {
    it('when a batch creates, upserts, updates and deletes contacts, then every record sends its own event, in the order of the answer', async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created', 'contacts.updated', 'contacts.deleted'] })
      const mark = crypto.randomUUID().slice(0, 8)
      const email = (name: string) => `${name}-${mark}@batch.example`
      const made = await t.http().post('/contacts').set(acme.key).send([{ first_name: 'Ada', email: email('ada') }, { first_name: 'Alan', email: email('alan') }])
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const upserted = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'upsert').send({
        idProperty: 'email', records: [{ first_name: 'Grace', email: email('grace') }, { first_name: 'Ada', last_name: 'Lovelace', email: email('ada') }]
      })
      expect(upserted.status, JSON.stringify(upserted.body)).toBe(201)
      expect(upserted.body).toMatchObject({ created: 1, updated: 1 })
      const ids = made.body.map((c: any) => c.id)
      const updated = await t.http().patch('/contacts').set(acme.key).set('X-Service-Method', 'batch-update').send({ records: [{ id: ids[1], last_name: 'Turing' }] })
      expect(updated.status, JSON.stringify(updated.body)).toBe(200)
      const deleted = await t.http().patch('/contacts').set(acme.key).set('X-Service-Method', 'batch-delete').send({ ids })
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200)

      await drain()
      const events = receiver.received.map((request) => verify(subscription.secret, request)).map((event: any) => [event.type, event.data.object.email])
      expect(events).toEqual([
        ['contacts.created', email('ada')], ['contacts.created', email('alan')],
        ['contacts.created', email('grace')], ['contacts.updated', email('ada')],
        ['contacts.updated', email('alan')],
        ['contacts.deleted', email('ada')], ['contacts.deleted', email('alan')]
      ])
    })
  })

  describe('contact merge', () => {
    it('when two contacts are merged, then the duplicate is contacts.deleted, the primary contacts.updated and each moved record an update of its resource', async () => {
      const primary = await created(t, acme, '/contacts', { first_name: 'Mia', email: `mia-${crypto.randomUUID().slice(0, 8)}@example.test` })
      const duplicate = await created(t, acme, '/contacts', { first_name: 'Mia', last_name: 'Hamm' })
      const activity = await created(t, acme, '/activities', { subject: 'Call Mia', activity_type: 'call', contact_id: duplicate.id })
      const subscription = await subscribe(acme, { events: ['*'] })
      const res = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'merge').send({ primary_id: primary.id, duplicate_ids: [duplicate.id] })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      await drain()
      const events = [...new Map(receiver.received.map((request) => [request.headers['webhook-id'], verify(subscription.secret, request)])).values()]
      expect(events.map((event) => [event.type, event.data.object.id])).toEqual([
        ['contacts.deleted', duplicate.id], ['contacts.updated', primary.id], ['activities.updated', activity.id]
      ])
      expect(events[1].data.object).toMatchObject({ last_name: 'Hamm' })
      expect(events[2].data.object).toMatchObject({ contact_id: primary.id })
    })
  })

  describe('deliveries written', () => {
    it('when no subscription wants the event, then a write stores no delivery; with one, one delivery and its job', async () => {
      const alone = await created(t, acme, '/contacts', { first_name: 'Mo' })
      const deliveriesOf = (contact: { id: number }) => t.db('webhook_deliveries').where({ organization_id: acme.organization.id }).whereRaw("payload::jsonb #>> '{data,object,id}' = ?", [String(contact.id)])
      expect(await deliveriesOf(alone)).toEqual([])

      await subscribe(acme, { events: ['contacts.created'] })
      const subscribed = await created(t, acme, '/contacts', { first_name: 'Ned' })
      const [delivery] = await deliveriesOf(subscribed)
      expect(delivery.payload.data.object.id).toBe(subscribed.id)
      expect(await t.db('outbox_jobs').where({ organization_id: acme.organization.id, topic: 'webhook' }).whereRaw("payload->>'delivery_id' = ?", [String(delivery.id)])).toHaveLength(1)
      await drain()
      await drain()
    })
  })

  describe('tenant isolation', () => {
    it("when another organization tries an organization's subscriptions and deliveries, then 404 by id and 403 by organization_id, and it never gets its events", async () => {
      const subscription = await subscribe(acme, { events: ['contacts.created'] })
      const theirs = await subscribe(globex, { events: ['contacts.created'], url: receiver.url('/globex') })
      await created(t, acme, '/contacts', { first_name: 'Lia' })
      await drain()
      expect(receiver.received.map((request) => request.path)).toEqual(['/hooks'])
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscription.id })).body.data

      expect((await t.http().get(`/webhook-subscriptions/${subscription.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().patch(`/webhook-subscriptions/${subscription.id}`).set(globex.key).send({ url: receiver.url('/stolen') })).status).toBe(404)
      expect((await t.http().delete(`/webhook-subscriptions/${subscription.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().post(`/webhook-subscriptions/${subscription.id}`).set(globex.key).set('X-Service-Method', 'rotate-secret').send({})).status).toBe(404)
      expect((await t.http().get('/webhook-subscriptions').set(globex.key).query({ organization_id: acme.organization.id })).status).toBe(403)
      expect((await t.http().post('/webhook-subscriptions').set(globex.key).send({ organization_id: acme.organization.id, url: receiver.url(), events: ['*'] })).status).toBe(403)

      expect((await t.http().get(`/webhook-deliveries/${delivery.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().post(`/webhook-deliveries/${delivery.id}`).set(globex.key).set('X-Service-Method', 'redeliver').send({})).status).toBe(404)
      expect((await t.http().get('/webhook-deliveries').set(globex.key).query({ organization_id: acme.organization.id })).status).toBe(403)
      const globexDeliveries = await t.http().get('/webhook-deliveries').set(globex.key)
      expect(globexDeliveries.body.data.map((d: any) => d.subscription_id)).not.toContain(subscription.id)
      expect(theirs.organization_id).toBe(globex.organization.id)
      expect((await t.http().get(`/webhook-subscriptions/${subscription.id}`).set(acme.key)).body.url).toBe(receiver.url())
    })

    it('when deliveries are written to, then 405: they are read only', async () => {
      expect((await t.http().post('/webhook-deliveries').set(acme.key).send({})).status).toBe(405)
      expect((await t.http().patch('/webhook-deliveries/1').set(acme.key).send({ status: 'delivered' })).status).toBe(405)
      expect((await t.http().delete('/webhook-deliveries/1').set(acme.key)).status).toBe(405)
    })
  })
})
