import crypto from 'node:crypto'
import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, bookableLink, created, inDays } from '../reservations/fixtures.js'
import { up as stripInvitationTokens } from '../../migrations/20261127020100_invitation_event_tokens.js'
import type { Receiver } from './receiver.js'
import { useWebhookApp, verify } from './webhook-app.js'

describe('outbound webhooks: events and their payloads', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let receiver: Receiver
  const { drain, subscribe } = useWebhookApp((world) => ({ t, acme, globex, receiver } = world))

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
