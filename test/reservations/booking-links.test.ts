import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, contact, created, inDays, link, resourceWithHours } from './fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('booking links and the public booking page', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let service: any
  let hidden: any
  let slug: string
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Salon')
    globex = await createTenant(t, 'Rival')
    service = await created(t, acme, '/reservation-services', { name: 'Haircut', duration_minutes: 60, price: 25.5, currency: 'EUR', max_advance_days: 400 })
    hidden = await created(t, acme, '/reservation-services', { name: 'Staff only', duration_minutes: 30 })
    const stylist = await resourceWithHours(t, acme, { name: 'Ana' }, [['09:00', '12:00']])
    await link(t, acme, service.id, stylist.id)
    await link(t, acme, hidden.id, stylist.id)
    slug = `salon-${acme.organization.id}`
  })
  afterAll(async () => {
    await t.close()
  })

  const pub = () => t.http()

  it('when one address sends more requests than the public limit, then 429 with Retry-After', async () => {
    t.app.set('publicRateLimitPoints', 3)
    try {
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) statuses.push((await pub().get('/public/booking-links/nothing-here')).status)
      expect(statuses).toEqual([404, 404, 404, 429])
      const limited = await pub().get('/public/booking-links/nothing-here')
      expect(limited.status).toBe(429)
      expect(limited.headers['retry-after']).toMatch(/^\d+$/)
      expect(limited.body).toMatchObject({ name: 'TooManyRequests', code: 429 })
    } finally {
      t.app.set('publicRateLimitPoints', 100_000)
    }
  })

  describe('/reservation-booking-links', () => {
    it('when a link is created, then 201 with the fields, and the slug is unique across organizations', async () => {
      const res = await t.http().post('/reservation-booking-links').set(acme.key).send({
        slug, name: 'Book a cut', service_ids: [service.id],
        page_config: { title: 'Salon', description: 'Best cuts', primary_color: '#112233', welcome_message: 'Hola' }
      })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, slug, name: 'Book a cut', service_ids: [service.id], is_active: true,
        page_config: { title: 'Salon', description: 'Best cuts', primary_color: '#112233', welcome_message: 'Hola' },
        created_by_user_id: acme.user.id, created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      expect((await t.http().get(`/reservation-booking-links/${res.body.id}`).set(acme.key)).body).toEqual(res.body)
      const taken = await t.http().post('/reservation-booking-links').set(globex.key).send({ slug: slug.toUpperCase().toLowerCase(), name: 'Copy' })
      expect(taken.status).toBe(409)
      expect(taken.body.errors).toEqual({ slug: 'is already taken' })
    })

    it('when slug, colour or service ids are invalid, then 400 naming the field', async () => {
      const bad = async (body: Record<string, unknown>, field: string) => {
        const res = await t.http().post('/reservation-booking-links').set(acme.key).send({ slug: `ok-${Math.random().toString(36).slice(2, 7)}`, name: 'x', ...body })
        expect(res.status, field).toBe(400)
        expect(Object.keys(res.body.errors)[0]).toBe(field)
      }
      await bad({ slug: 'Not Safe!' }, 'slug')
      await bad({ page_config: { primary_color: 'red' } }, 'page_config.primary_color')
      await bad({ page_config: { font: 'Comic' } }, 'page_config.font')
      await bad({ service_ids: [999999] }, 'service_ids')
    })

    it('when a logo is signed with POST /storage-url-signing, then its public URL is stored in page_config and shown on the page', async () => {
      const signed = await t.http().post('/storage-url-signing').set(acme.key).send({ type: 'booking-link-logo', file_name: 'logo.png', content_type: 'image/png', file_size: 100 })
      expect(signed.status).toBe(201)
      const own = await created(t, acme, '/reservation-booking-links', { slug: `logo-${acme.organization.id}`, name: 'Logo', service_ids: [service.id] })
      const patched = await t.http().patch(`/reservation-booking-links/${own.id}`).set(acme.key).send({ page_config: { logo_url: signed.body.public_url } })
      expect(patched.status).toBe(200)
      const page = await pub().get(`/public/booking-links/logo-${acme.organization.id}`)
      expect(page.body.page_config).toEqual({ logo_url: signed.body.public_url })
    })

    it('when another organization uses a link by id, by organization_id or in service_ids, then 404, 403 and 400', async () => {
      const own = await created(t, acme, '/reservation-booking-links', { slug: `mine-${acme.organization.id}`, name: 'Mine' })
      expect((await t.http().get(`/reservation-booking-links/${own.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().patch(`/reservation-booking-links/${own.id}`).set(globex.key).send({ is_active: false })).status).toBe(404)
      expect((await t.http().delete(`/reservation-booking-links/${own.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().get('/reservation-booking-links').set(globex.key).query({ organization_id: acme.organization.id })).status).toBe(403)
      const stolen = await t.http().post('/reservation-booking-links').set(globex.key).send({ slug: `steal-${globex.organization.id}`, name: 'Steal', service_ids: [service.id] })
      expect(stolen.status).toBe(400)
      expect(stolen.body.errors).toHaveProperty('service_ids')
    })
  })

  describe('public flow', () => {
    it('when a visitor books twice with one e-mail and cancels with the manage token, then one contact, source booking_link, and the time is freed', async () => {
      const page = await pub().get(`/public/booking-links/${slug}`)
      expect(page.status).toBe(200)
      expect(page.body).toEqual({
        name: 'Book a cut',
        page_config: { title: 'Salon', description: 'Best cuts', primary_color: '#112233', welcome_message: 'Hola' },
        services: [{ id: service.id, name: 'Haircut', description: null, duration_minutes: 60, max_party_size: null, price: '25.50', currency: 'EUR', image_url: null, timezone: 'UTC' }]
      })
      const date = inDays(6)
      const slots = await pub().get(`/public/booking-links/${slug}/slots`).query({ service_id: service.id, date })
      expect(slots.status).toBe(200)
      expect(slots.body).toEqual({
        service_id: service.id, date, timezone: 'UTC',
        data: ['09:00', '10:00', '11:00'].map((time) => ({ start_datetime: at(date, time), end_datetime: at(date, `${Number(time.slice(0, 2)) + 1}:00`.padStart(5, '0')) }))
      })

      const visitor = { first_name: 'Marta', last_name: 'Gil', email: 'Marta.Gil@example.test', phone: '600 111 222', phone_country_code: '+34', phone_country_iso: 'es' }
      const booked = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '10:00'), contact: visitor, notes: 'short please' })
      expect(booked.status, JSON.stringify(booked.body)).toBe(201)
      expect(booked.body).toEqual({
        reservation: {
          id: expect.any(Number), service_id: service.id, start_datetime: at(date, '10:00'), end_datetime: at(date, '11:00'), party_size: 1,
          status: 'confirmed', notes: 'short please', custom_fields_by_key: {}, cancelled_at: null, cancelled_by: null
        },
        manage_token: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/)
      })
      const again = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '11:00'), contact: { ...visitor, email: 'marta.gil@EXAMPLE.test' } })
      expect(again.status).toBe(201)
      const contacts = await t.http().get('/contacts').set(acme.key).query({ email: 'Marta.Gil@example.test' })
      expect(contacts.body.total).toBe(1)
      expect(contacts.body.data[0]).toMatchObject({ first_name: 'Marta', last_name: 'Gil', phone: '600 111 222', phone_country_iso: 'ES', phone_e164: '+34600111222' })

      const privateView = await t.http().get(`/reservations/${booked.body.reservation.id}`).set(acme.key)
      expect(privateView.body).toMatchObject({ source: 'booking_link', contact_id: contacts.body.data[0].id, created_by_user_id: null, contact: { first_name: 'Marta' } })
      expect(privateView.body).not.toHaveProperty('manage_token_hash')
      const taken = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '10:00'), contact: visitor })
      expect(taken.status).toBe(409)

      const cancel = await pub().post(`/public/reservations/${booked.body.manage_token}/cancel`).send({ reason: 'cannot come' })
      expect(cancel.status).toBe(201)
      expect(cancel.body).toMatchObject({ status: 'cancelled', cancelled_by: 'contact', cancelled_at: expect.stringMatching(ISO_MS) })
      const read = await t.http().get(`/reservations/${booked.body.reservation.id}`).set(acme.key)
      expect(read.body).toMatchObject({ status: 'cancelled', cancelled_by: 'contact', cancellation_reason: 'cannot come' })
      const after = await pub().get(`/public/booking-links/${slug}/slots`).query({ service_id: service.id, date })
      expect(after.body.data.map((s: any) => s.start_datetime)).toEqual([at(date, '09:00'), at(date, '10:00')])
      expect((await pub().post('/public/reservations/not-a-token/cancel').send({})).status).toBe(404)
    })

    it('when a visitor gives a phone that cannot be valid for its country, then 400 naming contact.phone and nothing is booked', async () => {
      const date = inDays(7)
      const visitor = { first_name: 'Pau', email: `pau-${Date.now()}@example.test`, phone: '600 111', phone_country_iso: 'ES' }
      const res = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: visitor })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ 'contact.phone': 'is not a valid phone number for ES' })
      expect((await t.http().get('/contacts').set(acme.key).query({ email: visitor.email })).body.total).toBe(0)
    })

    it('when a visitor cancels with no body, an empty JSON body or {}, then each reservation is cancelled without a reason', async () => {
      const date = inDays(13)
      const visitor = { first_name: 'Lia', last_name: 'Ruiz', email: 'lia.ruiz@example.test' }
      const cancels = [
        (token: string) => pub().post(`/public/reservations/${token}/cancel`),
        (token: string) => pub().post(`/public/reservations/${token}/cancel`).set('Content-Type', 'application/json').send(''),
        (token: string) => pub().post(`/public/reservations/${token}/cancel`).send({})
      ]
      for (const [i, cancel] of cancels.entries()) {
        const booked = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, `${9 + i}:00`.padStart(5, '0')), contact: visitor })
        expect(booked.status, JSON.stringify(booked.body)).toBe(201)
        const res = await cancel(booked.body.manage_token)
        expect(res.status, JSON.stringify(res.body)).toBe(201)
        expect(res.body).toMatchObject({ status: 'cancelled', cancelled_by: 'contact' })
        const read = await t.http().get(`/reservations/${booked.body.reservation.id}`).set(acme.key)
        expect(read.body).toMatchObject({ status: 'cancelled', cancellation_reason: null })
      }
    })

    it('when a service is not on the link, belongs to another organization or the body is invalid, then 400 and nothing is booked', async () => {
      const date = inDays(7)
      const theirs = await created(t, globex, '/reservation-services', { name: 'Theirs', duration_minutes: 60 })
      const visitor = { first_name: 'Eva', email: 'eva@example.test' }
      for (const serviceId of [hidden.id, theirs.id]) {
        const slots = await pub().get(`/public/booking-links/${slug}/slots`).query({ service_id: serviceId, date })
        expect(slots.status).toBe(400)
        expect(slots.body.errors).toEqual({ service_id: 'is not offered on this booking page' })
        const booking = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: serviceId, start_datetime: at(date, '09:00'), contact: visitor })
        expect(booking.status).toBe(400)
      }
      const noEmail = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: { first_name: 'Eva' } })
      expect(noEmail.status).toBe(400)
      expect(noEmail.body.errors).toHaveProperty(['contact.email'])
      const sneaky = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: visitor, organization_id: globex.organization.id, contact_id: 1 })
      expect(sneaky.status).toBe(400)
      expect((await t.db('contacts').where({ organization_id: acme.organization.id, email: 'eva@example.test' })).length).toBe(0)
    })

    it('when one new visitor books two times at once, then a single contact is created for both (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      const date = inDays(8)
      const visitor = { first_name: 'Nuria', email: 'nuria@example.test' }
      const both = await Promise.all(['09:00', '11:00'].map((time) =>
        pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, time), contact: visitor })))
      expect(both.map((r) => r.status)).toEqual([201, 201])
      const contacts = await t.http().get('/contacts').set(acme.key).query({ email: 'nuria@example.test' })
      expect(contacts.body.total).toBe(1)
      const mine = await t.http().get('/reservations').set(acme.key).query({ contact_id: contacts.body.data[0].id })
      expect(mine.body.total).toBe(2)
    })

    it('when a visitor sends custom fields by key, then they are validated and stored on the reservation', async () => {
      await created(t, acme, '/custom-fields', { entity_type: 'reservation', key: 'hair_length', name: 'Hair length', field_type: 'select', options: ['short', 'long'] })
      const date = inDays(9)
      const visitor = { first_name: 'Iris', email: 'iris@example.test' }
      const bad = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: visitor, custom_fields_by_key: { hair_length: 'medium' } })
      expect(bad.status).toBe(400)
      expect(bad.body.errors).toEqual({ 'custom_fields_by_key.hair_length': 'must be one of: short, long' })
      const ok = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: visitor, custom_fields_by_key: { hair_length: 'long' } })
      expect(ok.status).toBe(201)
      expect(ok.body.reservation.custom_fields_by_key).toEqual({ hair_length: 'long' })
      expect((await t.http().get(`/reservations/${ok.body.reservation.id}`).set(acme.key)).body.custom_fields_by_key).toEqual({ hair_length: 'long' })
    })

    it('when a public booking fails (the time is taken, a custom field is bad), then no contact is written; when it succeeds, the contact and the reservation both are', async () => {
      const date = inDays(10)
      const contactsTotal = async () => (await t.http().get('/contacts').set(acme.key)).body.total as number
      const first = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: { first_name: 'Olga', email: 'olga@example.test' } })
      expect(first.status).toBe(201)
      const before = await contactsTotal()

      const taken = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '09:00'), contact: { first_name: 'Pau', email: 'pau@example.test' } })
      expect(taken.status).toBe(409)
      const badField = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '10:00'), contact: { first_name: 'Pau', email: 'pau@example.test' }, custom_fields_by_key: { not_a_field: 'x' } })
      expect(badField.status).toBe(400)
      expect(badField.body.errors).toEqual({ 'custom_fields_by_key.not_a_field': 'is not a custom field key of this organization' })
      expect(await contactsTotal()).toBe(before)
      expect((await t.http().get('/contacts').set(acme.key).query({ email: 'pau@example.test' })).body.total).toBe(0)

      const ok = await pub().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: at(date, '10:00'), contact: { first_name: 'Pau', email: 'pau@example.test' } })
      expect(ok.status, JSON.stringify(ok.body)).toBe(201)
      expect(await contactsTotal()).toBe(before + 1)
      const pau = await t.http().get('/contacts').set(acme.key).query({ email: 'pau@example.test' })
      expect(pau.body.total).toBe(1)
      const reservation = await t.http().get(`/reservations/${ok.body.reservation.id}`).set(acme.key)
      expect(reservation.body).toMatchObject({ contact_id: pau.body.data[0].id, source: 'booking_link', status: 'confirmed' })
      expect((await t.http().get(`/contacts/${pau.body.data[0].id}`).set(globex.key)).status).toBe(404)
    })

    it('when a link is inactive or deleted, then every public route answers 404; the private API is not reachable through them', async () => {
      const own = await created(t, acme, '/reservation-booking-links', { slug: `gone-${acme.organization.id}`, name: 'Gone', service_ids: [service.id] })
      const routes = async (s: string) => [
        (await pub().get(`/public/booking-links/${s}`)).status,
        (await pub().get(`/public/booking-links/${s}/slots`).query({ service_id: service.id, date: inDays(3) })).status,
        (await pub().post(`/public/booking-links/${s}/reservations`).send({ service_id: service.id, start_datetime: at(inDays(3), '09:00'), contact: { first_name: 'X', email: 'x@example.test' } })).status
      ]
      expect((await routes(own.slug))[0]).toBe(200)
      await t.http().patch(`/reservation-booking-links/${own.id}`).set(acme.key).send({ is_active: false }).expect(200)
      expect(await routes(own.slug)).toEqual([404, 404, 404])
      await t.http().patch(`/reservation-booking-links/${own.id}`).set(acme.key).send({ is_active: true }).expect(200)
      await t.http().delete(`/reservation-booking-links/${own.id}`).set(acme.key).expect(200)
      expect(await routes(own.slug)).toEqual([404, 404, 404])
      expect((await pub().get(`/public/booking-links/${slug}/reservations`)).status).toBe(405)
      expect((await pub().get('/public/booking-links')).status).toBe(405)
      expect((await pub().get('/reservations')).status).toBe(401)
    })
  })
})
