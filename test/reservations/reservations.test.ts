import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, contact, created, inDays, link, resourceWithHours, slotsOf } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('reservations', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  useApp({ tenants: ['Salon', 'Rival'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  /** An hour-long service on one resource open 09:00-13:00 every day. */
  async function hourly(tenant = acme, service: Record<string, unknown> = {}, resource: Record<string, unknown> = {}) {
    const s = await created(t, tenant, '/reservation-services', { name: 'Massage', duration_minutes: 60, max_advance_days: 400, ...service })
    const r = await resourceWithHours(t, tenant, { name: `Therapist ${s.id}`, ...resource }, [['09:00', '13:00']])
    await link(t, tenant, s.id, r.id)
    return { service: s, resource: r }
  }
  const book = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/reservations').set(tenant.key).send(body)

  describe('create', () => {
    it('when a start is an offered slot, then 201 confirmed with the resource allocated, joined to contact, service and resource as GET is', async () => {
      const { service, resource } = await hourly()
      const person = await contact(t, acme, { phone: '+34 600 000 001' })
      const date = inDays(5)
      const res = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00'), notes: 'first visit' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      const { contact: joinedContact, service: joinedService, resource: joinedResource, ...fields } = res.body
      expect(fields).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, service_id: service.id, contact_id: person.id,
        resource_id: resource.id, start_datetime: at(date, '10:00'), end_datetime: at(date, '11:00'), party_size: 1,
        status: 'confirmed', notes: 'first visit', deal_id: null, company_id: null, custom_fields_by_key: {},
        cancelled_at: null, cancelled_by: null, cancellation_reason: null, source: 'api', booking_link_id: null,
        created_by_user_id: acme.user.id, created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      expect({ contact: joinedContact, service: joinedService, resource: joinedResource }).toMatchObject({
        contact: { id: person.id, first_name: 'Carmen', last_name: 'Vidal', email: person.email, phone: '+34 600 000 001' },
        service: { id: service.id, name: 'Massage', duration_minutes: 60 },
        resource: { id: resource.id, name: resource.name }
      })
      const read = await t.http().get(`/reservations/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual(res.body)
      expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(date, '09:00'), at(date, '11:00'), at(date, '12:00')])
    })

    it('when the service requires confirmation, then the reservation starts pending and blocks the time', async () => {
      const { service } = await hourly(acme, { requires_confirmation: true })
      const person = await contact(t, acme)
      const date = inDays(5)
      const res = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:00') })
      expect(res.status).toBe(201)
      expect(res.body.status).toBe('pending')
      expect(await slotsOf(t, acme, { service_id: service.id, date })).not.toContain(at(date, '09:00'))
    })

    it('when the start is not an offered slot, then 409 naming start_datetime and nothing is written', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      const date = inDays(6)
      for (const start of [at(date, '09:30'), at(date, '13:00'), at(inDays(-1), '10:00')]) {
        const res = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })
        expect(res.status).toBe(409)
        expect(res.body).toMatchObject({ name: 'Conflict', code: 409, errors: { start_datetime: 'is not an available slot of this service' } })
      }
      const rows = await t.db('reservations').where({ organization_id: acme.organization.id, contact_id: person.id })
      expect(rows).toEqual([])
    })

    it('when the preferred resource is busy but another alternative is free, then 409 naming resource_id; without preference the free one is taken', async () => {
      const service = await created(t, acme, '/reservation-services', { name: 'Cut', duration_minutes: 60, max_advance_days: 400 })
      const ana = await resourceWithHours(t, acme, { name: 'Ana' }, [['09:00', '12:00']])
      const bea = await resourceWithHours(t, acme, { name: 'Bea' }, [['09:00', '12:00']])
      await link(t, acme, service.id, ana.id, false)
      await link(t, acme, service.id, bea.id, false)
      const person = await contact(t, acme)
      const start = at(inDays(7), '09:00')
      const first = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, resource_id: ana.id })
      expect(first.body.resource_id).toBe(ana.id)
      const again = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, resource_id: ana.id })
      expect(again.status).toBe(409)
      expect(again.body.errors).toEqual({ resource_id: 'is not free at this time' })
      const any = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })
      expect(any.status).toBe(201)
      expect(any.body.resource_id).toBe(bea.id)
      const full = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })
      expect(full.status).toBe(409)
      expect(full.body.errors).toHaveProperty('start_datetime')
    })

    it('when party_size exceeds max_party_size or the capacity, then 400 with errors.party_size; within capacity it takes that many units', async () => {
      const { service, resource } = await hourly(acme, { max_party_size: 4 }, { type: 'room', capacity: 3 })
      const person = await contact(t, acme)
      const start = at(inDays(8), '09:00')
      const tooMany = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, party_size: 5 })
      expect(tooMany.status).toBe(400)
      expect(tooMany.body.errors.party_size).toMatch(/at most 4/)
      const overCapacity = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, party_size: 4 })
      expect(overCapacity.status).toBe(400)
      expect(overCapacity.body.errors).toHaveProperty('party_size')
      const two = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, party_size: 2 })
      expect(two.status).toBe(201)
      const units = await t.db('reservation_allocations').where({ organization_id: acme.organization.id, reservation_id: two.body.id }).orderBy('unit')
      expect(units.map((u) => [u.resource_id, u.unit])).toEqual([[resource.id, 0], [resource.id, 1]])
      const another = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start, party_size: 2 })
      expect(another.status).toBe(409)
    })

    it('when 20 requests race for the last unit, then exactly one gets 201 and nineteen get 409 (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      const { service, resource } = await hourly(acme, {}, { type: 'room', capacity: 3 })
      const person = await contact(t, acme)
      const start = at(inDays(9), '11:00')
      for (let i = 0; i < 2; i++) {
        expect((await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })).status).toBe(201)
      }
      const results = await Promise.all(Array.from({ length: 20 }, () => book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })))
      const statuses = results.map((r) => r.status).sort()
      expect(statuses.filter((s) => s === 201)).toHaveLength(1)
      expect(statuses.filter((s) => s === 409)).toHaveLength(19)
      const held = await t.db('reservation_allocations').where({ organization_id: acme.organization.id, resource_id: resource.id })
      expect(held.map((a) => a.unit).sort()).toEqual([0, 1, 2])
      const list = await t.http().get('/reservations').set(acme.key).query({ service_id: service.id, status: 'confirmed' })
      expect(list.body.total).toBe(3)
    })

    it('when a unit is written twice over overlapping times, even straight into the table, then the database refuses the second', async () => {
      const { service, resource } = await hourly()
      const person = await contact(t, acme)
      const start = at(inDays(9), '09:00')
      const booked = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: start })).body
      const [held] = await t.db('reservation_allocations').where({ organization_id: acme.organization.id, reservation_id: booked.id })
      expect(held).toMatchObject({ resource_id: resource.id, unit: 0 })
      const overlapping = t.db('reservation_allocations').insert({
        organization_id: acme.organization.id, reservation_id: booked.id, resource_id: resource.id, unit: 0,
        during: t.db.raw("tstzrange(?::timestamptz + interval '59 minutes', ?::timestamptz + interval '2 hours')", [start, start])
      })
      await expect(overlapping).rejects.toMatchObject({ code: '23P01' })
      const adjacent = await t.db('reservation_allocations').insert({
        organization_id: acme.organization.id, reservation_id: booked.id, resource_id: resource.id, unit: 0,
        during: t.db.raw("tstzrange(?::timestamptz + interval '1 hour', ?::timestamptz + interval '2 hours')", [start, start])
      }).returning('id')
      expect(adjacent).toHaveLength(1)
    })

    it('when references point to other records or custom fields are sent by key, then they are checked', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      await created(t, acme, '/custom-fields', { entity_type: 'reservation', key: 'allergies', name: 'Allergies', field_type: 'text' })
      await created(t, acme, '/custom-fields', { entity_type: 'reservation', key: 'visits', name: 'Visits', field_type: 'number' })
      const date = inDays(10)
      const ok = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:00'), custom_fields_by_key: { allergies: 'latex', visits: 3 } })
      expect(ok.status, JSON.stringify(ok.body)).toBe(201)
      expect(ok.body.custom_fields_by_key).toEqual({ allergies: 'latex', visits: 3 })
      const bad = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00'), custom_fields_by_key: { visits: 'many', unknown: 1 } })
      expect(bad.status).toBe(400)
      expect(Object.keys(bad.body.errors).sort()).toEqual(['custom_fields_by_key.unknown', 'custom_fields_by_key.visits'])
      const patched = await t.http().patch(`/reservations/${ok.body.id}`).set(acme.key).send({ custom_fields_by_key: { visits: 4 } })
      expect(patched.status).toBe(200)
      const read = await t.http().get(`/reservations/${ok.body.id}`).set(acme.key)
      expect(read.body.custom_fields_by_key).toEqual({ allergies: 'latex', visits: 4 })
      expect(read.body).not.toHaveProperty('custom_fields')
    })

    it('when the body sets server fields or misses contact_id, then 400 naming them', async () => {
      const { service } = await hourly()
      const res = await book(acme, { service_id: service.id, start_datetime: at(inDays(3), '09:00'), status: 'completed', end_datetime: at(inDays(3), '12:00'), source: 'assistant' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toMatchObject({ contact_id: 'is required', status: 'is not allowed', end_datetime: 'is not allowed', source: 'is not allowed' })
    })
  })

  describe('status and reschedule', () => {
    it('when statuses move, then only pending → confirmed | cancelled and confirmed → cancelled | completed | no_show are allowed', async () => {
      const { service } = await hourly(acme, { requires_confirmation: true })
      const person = await contact(t, acme)
      const date = inDays(12)
      const make = async (time: string) => (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, time) })).body
      const move = (id: number, status: string) => t.http().patch(`/reservations/${id}`).set(acme.key).send({ status })

      const a = await make('09:00')
      expect((await move(a.id, 'completed')).status).toBe(400)
      expect((await move(a.id, 'confirmed')).status).toBe(200)
      expect((await move(a.id, 'pending')).status).toBe(400)
      const done = await move(a.id, 'completed')
      expect(done.status).toBe(200)
      const final = await move(a.id, 'cancelled')
      expect(final.status).toBe(400)
      expect(final.body.errors).toEqual({ status: 'completed is final' })
      expect((await t.http().get(`/reservations/${a.id}`).set(acme.key)).body.status).toBe('completed')

      const b = await make('10:00')
      const cancelled = await t.http().patch(`/reservations/${b.id}`).set(acme.key).send({ status: 'cancelled', cancellation_reason: 'ill' })
      expect(cancelled.status).toBe(200)
      expect(cancelled.body).toMatchObject({ status: 'cancelled', cancelled_by: 'organization', cancellation_reason: 'ill', cancelled_at: expect.stringMatching(ISO_MS) })
      expect((await move(b.id, 'confirmed')).status).toBe(400)
      const c = await make('11:00')
      expect((await move(c.id, 'confirmed')).status).toBe(200)
      expect((await move(c.id, 'no_show')).status).toBe(200)
      expect((await t.http().patch(`/reservations/${c.id}`).set(acme.key).send({ start_datetime: at(date, '12:00') })).status).toBe(400)
      // completed, cancelled and no_show free their time.
      expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual(['09:00', '10:00', '11:00', '12:00'].map((time) => at(date, time)))
    })

    it('when a reschedule targets a taken time, then 409 and nothing changes; to a free time, then both times move at once', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      const date = inDays(13)
      const a = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:00') })).body
      const b = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00') })).body
      const clash = await t.http().patch(`/reservations/${a.id}`).set(acme.key).send({ start_datetime: at(date, '10:00'), notes: 'moved' })
      expect(clash.status).toBe(409)
      const unchanged = await t.http().get(`/reservations/${a.id}`).set(acme.key)
      expect(unchanged.body).toMatchObject({ start_datetime: at(date, '09:00'), end_datetime: at(date, '10:00'), notes: null })
      expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(date, '11:00'), at(date, '12:00')])

      // Overlapping its own old time is fine: the reservation's own hold is ignored.
      const service30 = await created(t, acme, '/reservation-services', { name: 'Half', duration_minutes: 60, slot_interval_minutes: 30, max_advance_days: 400 })
      const r = await resourceWithHours(t, acme, { name: 'Half room', type: 'room' }, [['09:00', '12:00']])
      await link(t, acme, service30.id, r.id)
      const c = (await book(acme, { service_id: service30.id, contact_id: person.id, start_datetime: at(date, '09:00') })).body
      const shifted = await t.http().patch(`/reservations/${c.id}`).set(acme.key).send({ start_datetime: at(date, '09:30') })
      expect(shifted.status).toBe(200)
      expect(shifted.body).toMatchObject({ start_datetime: at(date, '09:30'), end_datetime: at(date, '10:30') })

      const moved = await t.http().patch(`/reservations/${a.id}`).set(acme.key).send({ start_datetime: at(date, '12:00') })
      expect(moved.status).toBe(200)
      expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(date, '09:00'), at(date, '11:00')])
      expect(b.id).toBeGreaterThan(a.id)
    })

    it('when two reservations race to reschedule into the same free hour, then one moves and the other stays where it was (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      const date = inDays(19)
      const a = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:00') })).body
      const b = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '10:00') })).body
      const [ra, rb] = await Promise.all([a, b].map((r) => t.http().patch(`/reservations/${r.id}`).set(acme.key).send({ start_datetime: at(date, '12:00') })))
      expect([ra.status, rb.status].sort()).toEqual([200, 409])
      const [winner, loser] = ra.status === 200 ? [a, b] : [b, a]
      expect((await t.http().get(`/reservations/${winner.id}`).set(acme.key)).body.start_datetime).toBe(at(date, '12:00'))
      expect((await t.http().get(`/reservations/${loser.id}`).set(acme.key)).body.start_datetime).toBe(loser.start_datetime)
      const free = await slotsOf(t, acme, { service_id: service.id, date })
      expect(free).toEqual([winner.start_datetime, at(date, '11:00')].sort())
    })

    it('when start_datetime is sent with a UTC offset, then it is read as that instant and returned in UTC with milliseconds', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      const date = inDays(20)
      const res = await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: `${date}T11:00:00+02:00` })
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({ start_datetime: at(date, '09:00'), end_datetime: at(date, '10:00') })
    })

    it('when a reservation is deleted, then it disappears and its time is free again', async () => {
      const { service } = await hourly()
      const person = await contact(t, acme)
      const date = inDays(14)
      const a = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:00') })).body
      const removed = await t.http().delete(`/reservations/${a.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toMatch(ISO_MS)
      expect((await t.http().get(`/reservations/${a.id}`).set(acme.key)).status).toBe(404)
      expect(await slotsOf(t, acme, { service_id: service.id, date })).toContain(at(date, '09:00'))
    })
  })

  describe('find', () => {
    it('when filtering by status, service, date range and searchTerm, then only matching rows come back, joined to their contact, service and resource', async () => {
      const tenant = await createTenant(t, 'Finder')
      const { service } = await hourly(tenant)
      const lucia = await contact(t, tenant, { first_name: 'Lucía', last_name: 'Ortega', email: 'lucia@ortega.test', phone: '+34 611 222 333' })
      const pablo = await contact(t, tenant, { first_name: 'Pablo', last_name: 'Ruiz', email: 'pablo@ruiz.test' })
      const date = inDays(16)
      const ids: number[] = []
      for (const [who, time] of [[lucia, '09:00'], [pablo, '10:00'], [lucia, '11:00'], [pablo, '12:00']] as const) {
        ids.push((await book(tenant, { service_id: service.id, contact_id: who.id, start_datetime: at(date, time) })).body.id)
      }
      await t.http().patch(`/reservations/${ids[3]}`).set(tenant.key).send({ status: 'cancelled' }).expect(200)
      const get = (query: Record<string, unknown>) => t.http().get('/reservations').set(tenant.key).send({ query })
      expect((await get({ status: 'cancelled' })).body.data.map((r: any) => r.id)).toEqual([ids[3]])
      expect((await get({ searchTerm: 'orte' })).body.data.map((r: any) => r.id)).toEqual([ids[0], ids[2]])
      expect((await get({ searchTerm: '611 222' })).body.total).toBe(2)
      expect((await get({ searchTerm: 'RUIZ.test' })).body.total).toBe(2)
      const range = await get({ start_datetime: { $gte: at(date, '10:00'), $lte: at(date, '11:00') }, $sort: { start_datetime: -1 } })
      expect(range.body.data.map((r: any) => r.id)).toEqual([ids[2], ids[1]])
      expect((await get({ contact_id: pablo.id, service_id: service.id })).body.total).toBe(2)
      const page = await get({})
      expect(page.body).toMatchObject({ total: 4, limit: 10, skip: 0 })
      expect((await get({ searchTerm: 'x' })).status).toBe(400)
      expect((await get({ colour: 'red' })).status).toBe(400)

      const joined = await get({ fastJoinForReservationList: true, $limit: 4 })
      expect(joined.body.data).toHaveLength(4)
      expect(joined.body.data[0]).toMatchObject({ contact: { id: lucia.id, first_name: 'Lucía' }, service: { id: service.id, name: 'Massage' }, resource: { id: expect.any(Number) } })
    })
  })

  it('when /openapi.json is read, then every reservation path is documented, the public ones without credentials', async () => {
    const res = await t.http().get('/openapi.json')
    expect(res.status).toBe(200)
    for (const path of [
      '/reservation-services', '/reservation-resources/{id}', '/reservation-service-resources', '/reservation-resource-availability',
      '/reservation-resource-exceptions', '/reservation-available-slots', '/reservations', '/reservations/{id}', '/reservation-booking-links',
      '/ai-assistants', '/ai-assistant-tool-calls', '/ai-assistant-tools',
      '/public/booking-links/{slug}', '/public/booking-links/{slug}/slots', '/public/booking-links/{slug}/reservations', '/public/reservations/{token}/cancel'
    ]) {
      expect(res.body.paths, path).toHaveProperty([path])
    }
    expect(res.body.paths['/public/booking-links/{slug}/reservations'].post.security).toEqual([])
    expect(res.body.components.schemas.Reservation.properties).toHaveProperty('custom_fields_by_key')
  })

  describe('across organizations', () => {
    const collections = [
      'reservation-services', 'reservation-resources', 'reservation-service-resources',
      'reservation-resource-availability', 'reservation-resource-exceptions', 'reservations'
    ]

    it('when another organization reads a record by id or lists with our organization_id, then 404 and 403, for every collection', async () => {
      const { service, resource } = await hourly()
      const person = await contact(t, acme)
      const [linkRow] = (await t.http().get('/reservation-service-resources').set(acme.key).query({ service_id: service.id })).body.data
      const [window] = (await t.http().get('/reservation-resource-availability').set(acme.key).query({ resource_id: resource.id })).body.data
      const exception = await created(t, acme, '/reservation-resource-exceptions', { resource_id: resource.id, date: inDays(3), type: 'blocked' })
      const reservation = (await book(acme, { service_id: service.id, contact_id: person.id, start_datetime: at(inDays(17), '09:00') })).body
      const ids = [service.id, resource.id, linkRow.id, window.id, exception.id, reservation.id]
      for (const [index, path] of collections.entries()) {
        const byId = await t.http().get(`/${path}/${ids[index]}`).set(globex.key)
        expect(byId.status, path).toBe(404)
        expect(byId.body.message).toBe(`No record found for id '${ids[index]}'`)
        expect((await t.http().patch(`/${path}/${ids[index]}`).set(globex.key).send({})).status, path).toBe(404)
        expect((await t.http().delete(`/${path}/${ids[index]}`).set(globex.key)).status, path).toBe(404)
        const byOrganization = await t.http().get(`/${path}`).set(globex.key).query({ organization_id: acme.organization.id })
        expect(byOrganization.status, path).toBe(403)
      }
      const slots = await t.http().get('/reservation-available-slots').set(globex.key).query({ organization_id: acme.organization.id, service_id: service.id, date: inDays(3) })
      expect(slots.status).toBe(403)
    })

    it('when a body references a service, resource or contact of another organization, then 400 naming the field', async () => {
      const ours = await hourly(globex)
      const theirs = await hourly(acme)
      const theirContact = await contact(t, acme)
      const ourContact = await contact(t, globex)
      const start = at(inDays(18), '09:00')
      const cases: [string, Record<string, unknown>, string][] = [
        ['/reservations', { service_id: theirs.service.id, contact_id: ourContact.id, start_datetime: start }, 'service_id'],
        ['/reservations', { service_id: ours.service.id, contact_id: theirContact.id, start_datetime: start }, 'contact_id'],
        ['/reservations', { service_id: ours.service.id, contact_id: ourContact.id, start_datetime: start, resource_id: theirs.resource.id }, 'resource_id'],
        ['/reservation-service-resources', { service_id: ours.service.id, resource_id: theirs.resource.id }, 'resource_id'],
        ['/reservation-service-resources', { service_id: theirs.service.id, resource_id: ours.resource.id }, 'service_id'],
        ['/reservation-resource-availability', { resource_id: theirs.resource.id, day_of_week: 1, start_time: '09:00', end_time: '10:00' }, 'resource_id'],
        ['/reservation-resource-exceptions', { resource_id: theirs.resource.id, date: inDays(3), type: 'blocked' }, 'resource_id'],
        ['/reservation-resources', { name: 'Spy', type: 'person', user_id: acme.user.id }, 'user_id']
      ]
      for (const [path, body, field] of cases) {
        const res = await t.http().post(path).set(globex.key).send(body)
        expect(res.status, `${path} ${field}`).toBe(400)
        expect(Object.keys(res.body.errors), `${path} ${field}`).toContain(field)
      }
      const slots = await t.http().get('/reservation-available-slots').set(globex.key).query({ service_id: theirs.service.id, date: inDays(3) })
      expect(slots.status).toBe(400)
      expect(slots.body.errors).toHaveProperty('service_id')
    })
  })
})
