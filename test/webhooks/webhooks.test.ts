import fs from 'node:fs'
import crypto from 'node:crypto'
import dns from 'node:dns'
import os from 'node:os'
import { describe, it, expect } from 'vitest'
import { Webhook } from 'standardwebhooks'
import type { TestApp } from '../helpers/app.js'
import { addMember } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, created } from '../reservations/fixtures.js'
import { isPrivateAddress } from '../../src/services/integrations/webhooks/addresses.js'
import type { Receiver } from './receiver.js'
import { TIMEOUT_MS, useWebhookApp, verify } from './webhook-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('outbound webhooks', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let receiver: Receiver
  const { receive, drain, deliveryOnce, subscribe } = useWebhookApp((world) => ({ t, acme, globex, receiver } = world))

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

    it('when WEBHOOK_REQUIRE_HTTPS is on (as config/production.json sets it), then a subscription needs an https:// url; off, http:// is taken', async () => {
      expect(JSON.parse(fs.readFileSync('config/production.json', 'utf8')).webhookRequireHttps).toBe(true)
      const create = (url: string) => t.http().post('/webhook-subscriptions').set(acme.key).send({ url, events: ['*'] })
      t.app.set('webhookRequireHttps', true)
      try {
        const res = await create('http://example.com/hooks')
        expect(res.status).toBe(400)
        expect(res.body.errors).toEqual({ url: 'must be an https:// URL' })
        expect((await create('https://example.com/hooks')).status).toBe(201)
      } finally {
        t.app.set('webhookRequireHttps', false)
      }
      expect((await create('http://example.com/hooks')).status).toBe(201)
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
      // The retry is answered after a while too (within the timeout): until then the delivery
      // shows its first, failed attempt, however quickly the worker retries.
      receiver.answer({ status: 200, delayMs: TIMEOUT_MS * 3 }, { status: 200, delayMs: TIMEOUT_MS / 2 })
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
      await t.db('webhook_subscriptions').where({ organization_id: acme.organization.id, id: subscription.id }).update({ failing_since: new Date(Date.now() - 4 * 24 * 3600 * 1000) })
      receiver.answer(...Array.from({ length: 5 }, () => ({ status: 500 })))
      await created(t, acme, '/contacts', { first_name: 'Flo' })
      await receive(1)
      // The streak is noted once the failed attempt is recorded, right after the receiver answered.
      for (let i = 0; i < 200 && (await t.db('webhook_subscriptions').where({ organization_id: acme.organization.id, id: subscription.id }).first()).is_active; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      const stored = await t.db('webhook_subscriptions').where({ organization_id: acme.organization.id, id: subscription.id }).first()
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
      expect((await t.db('webhook_subscriptions').where({ organization_id: acme.organization.id, id: subscription.id }).first()).failing_since).not.toBeNull()
    })
  })
})
