import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { created } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('reservation services, resources, links, hours and exceptions', () => {
  let t: TestApp
  let acme: Tenant
  useApp({ tenants: ['Salon'] }, (app) => ({ t, tenants: [acme] } = app))

  it('when a service is created with the required fields only, then the defaults apply and the interval follows the duration', async () => {
    const res = await t.http().post('/reservation-services').set(acme.key).send({ name: 'Cut', duration_minutes: 45 })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number), organization_id: acme.organization.id, name: 'Cut', description: null, duration_minutes: 45, slot_interval_minutes: 45,
      buffer_before_minutes: 0, buffer_after_minutes: 0, min_notice_minutes: 0, max_advance_days: 60, max_party_size: null,
      requires_confirmation: false, is_active: true, timezone: null, price: null, currency: null, image_url: null,
      created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
    })
    const priced = await t.http().patch(`/reservation-services/${res.body.id}`).set(acme.key).send({ price: 19.9, currency: 'EUR', is_active: false })
    expect(priced.body).toMatchObject({ price: '19.90', currency: 'EUR', is_active: false })
    const active = await t.http().get('/reservation-services').set(acme.key).query({ is_active: 'false' })
    expect(active.body.data.map((s: any) => s.id)).toEqual([res.body.id])
    expect(active.body).toMatchObject({ limit: 10, skip: 0 })
  })

  it('when a service has a zero duration, an unknown time zone or a price with fractions of cents, then 400 naming the field', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await t.http().post('/reservation-services').set(acme.key).send({ name: 'x', duration_minutes: 30, ...body })
      expect(res.status, field).toBe(400)
      expect(Object.keys(res.body.errors), field).toContain(field)
    }
    await bad({ duration_minutes: 0 }, 'duration_minutes')
    await bad({ timezone: 'Mars/Olympus' }, 'timezone')
    await bad({ price: 1.234 }, 'price')
    await bad({ slot_interval_minutes: -5 }, 'slot_interval_minutes')
  })

  it('when a resource is created, then type and capacity are kept; user_id must be a member and only on a person', async () => {
    const member = await addMember(t, acme, 'member')
    const person = await t.http().post('/reservation-resources').set(acme.key).send({ name: 'Ana', type: 'person', user_id: member.user.id, timezone: 'Europe/Madrid' })
    expect(person.status).toBe(201)
    expect(person.body).toMatchObject({ type: 'person', capacity: 1, user_id: member.user.id, timezone: 'Europe/Madrid', is_active: true })
    const room = await t.http().post('/reservation-resources').set(acme.key).send({ name: 'Room', type: 'room', user_id: member.user.id })
    expect(room.status).toBe(400)
    expect(room.body.errors).toEqual({ user_id: 'is only for a resource of type person' })
    const stranger = await signUpStranger()
    const notMember = await t.http().post('/reservation-resources').set(acme.key).send({ name: 'Eve', type: 'person', user_id: stranger })
    expect(notMember.status).toBe(400)
    expect(notMember.body.errors).toHaveProperty('user_id')
    const kind = await t.http().post('/reservation-resources').set(acme.key).send({ name: 'Van', type: 'vehicle' })
    expect(kind.status).toBe(400)
    const list = await t.http().get('/reservation-resources').set(acme.key).query({ type: 'person' })
    expect(list.body.data.map((r: any) => r.id)).toEqual([person.body.id])
  })

  async function signUpStranger() {
    const other = await createTenant(t, 'Elsewhere')
    return other.user.id
  }

  it('when weekly windows of a resource overlap on a day, then 400; touching and other days are fine; end before start → 400', async () => {
    const resource = await created(t, acme, '/reservation-resources', { name: 'Hours', type: 'room' })
    const add = (body: Record<string, unknown>) => t.http().post('/reservation-resource-availability').set(acme.key).send({ resource_id: resource.id, ...body })
    const morning = await add({ day_of_week: 1, start_time: '09:00', end_time: '13:00' })
    expect(morning.status).toBe(201)
    expect(morning.body).toMatchObject({ day_of_week: 1, start_time: '09:00:00', end_time: '13:00:00' })
    const overlap = await add({ day_of_week: 1, start_time: '12:30', end_time: '15:00' })
    expect(overlap.status).toBe(400)
    expect(overlap.body.errors.start_time).toMatch(/overlaps the window/)
    expect((await add({ day_of_week: 1, start_time: '13:00', end_time: '17:00' })).status).toBe(201)
    expect((await add({ day_of_week: 2, start_time: '12:30', end_time: '15:00' })).status).toBe(201)
    const backwards = await add({ day_of_week: 3, start_time: '15:00', end_time: '09:00' })
    expect(backwards.status).toBe(400)
    expect(backwards.body.errors).toEqual({ end_time: 'must be later than start_time' })
    expect((await add({ day_of_week: 7, start_time: '09:00', end_time: '10:00' })).body.errors).toHaveProperty('day_of_week')
    expect((await add({ day_of_week: 4, start_time: '9am', end_time: '10:00' })).body.errors).toHaveProperty('start_time')
    const moved = await t.http().patch(`/reservation-resource-availability/${morning.body.id}`).set(acme.key).send({ end_time: '14:00' })
    expect(moved.status).toBe(400)
    const monday = await t.http().get('/reservation-resource-availability').set(acme.key).query({ resource_id: resource.id, day_of_week: 1, $sort: { start_time: 1 } })
    expect(monday.body.data.map((w: any) => [w.start_time, w.end_time])).toEqual([['09:00:00', '13:00:00'], ['13:00:00', '17:00:00']])
  })

  it('when exceptions are created, then special hours need both times and blocked takes both or none', async () => {
    const resource = await created(t, acme, '/reservation-resources', { name: 'Exceptions', type: 'room' })
    const add = (body: Record<string, unknown>) => t.http().post('/reservation-resource-exceptions').set(acme.key).send({ resource_id: resource.id, date: '2030-01-07', ...body })
    const day = await add({ type: 'blocked', reason: 'holiday' })
    expect(day.status).toBe(201)
    expect(day.body).toMatchObject({ date: '2030-01-07', type: 'blocked', start_time: null, end_time: null, reason: 'holiday' })
    expect((await add({ type: 'special_hours' })).body.errors).toEqual({ start_time: 'is required for special_hours' })
    expect((await add({ type: 'blocked', start_time: '10:00' })).body.errors).toEqual({ end_time: 'is required with the other time' })
    expect((await add({ type: 'special_hours', start_time: '12:00', end_time: '11:00' })).body.errors).toEqual({ end_time: 'must be later than start_time' })
    expect((await add({ type: 'special_hours', start_time: '10:00', end_time: '11:00' })).status).toBe(201)
    expect((await add({ type: 'closed' })).status).toBe(400)
    const list = await t.http().get('/reservation-resource-exceptions').set(acme.key).query({ resource_id: resource.id, type: 'special_hours' })
    expect(list.body.total).toBe(1)
  })

  it('when a resource is linked to a service twice, then 409; quantity must be positive', async () => {
    const service = await created(t, acme, '/reservation-services', { name: 'Linked', duration_minutes: 30 })
    const resource = await created(t, acme, '/reservation-resources', { name: 'Linked room', type: 'room', capacity: 4 })
    const first = await t.http().post('/reservation-service-resources').set(acme.key).send({ service_id: service.id, resource_id: resource.id, quantity: 2 })
    expect(first.status).toBe(201)
    expect(first.body).toMatchObject({ service_id: service.id, resource_id: resource.id, is_required: true, quantity: 2 })
    const twice = await t.http().post('/reservation-service-resources').set(acme.key).send({ service_id: service.id, resource_id: resource.id, is_required: false })
    expect(twice.status).toBe(409)
    expect((await t.http().patch(`/reservation-service-resources/${first.body.id}`).set(acme.key).send({ quantity: 0 })).status).toBe(400)
    await t.http().delete(`/reservation-service-resources/${first.body.id}`).set(acme.key).expect(200)
    expect((await t.http().post('/reservation-service-resources').set(acme.key).send({ service_id: service.id, resource_id: resource.id })).status).toBe(201)
  })
})
