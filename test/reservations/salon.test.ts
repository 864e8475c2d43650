import { describe, it, expect } from 'vitest'
import { DateTime } from 'luxon'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, contact, created, link, nextClockChange } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ZONE = 'Europe/Madrid'

/**
 * The acceptance walk-through, as a new user would do it: a salon in Madrid with two
 * stylists and one room, weekly hours and a holiday, a week of slots across the spring clock
 * change, bookings by API, by the public page and by the assistant, and a rush that cannot overlap.
 */
describe('a salon in Madrid, end to end', () => {
  let t: TestApp
  let salon: Tenant
  useApp({ tenants: ['Salon'] }, (app) => ({ t, tenants: [salon] } = app))

  it('when the salon is set up, then a week across the clock change offers 09:00-17:00 local, none on Sunday or the holiday, and bookings never overlap', async () => {
    await t.http().patch(`/organizations/${salon.organization.id}`).set(salon.bearer).send({ timezone: ZONE }).expect(200)
    const cut = await created(t, salon, '/reservation-services', { name: 'Haircut', duration_minutes: 60, slot_interval_minutes: 30, max_advance_days: 400 })
    const room = await created(t, salon, '/reservation-resources', { name: 'Room', type: 'room', capacity: 2 })
    const ana = await created(t, salon, '/reservation-resources', { name: 'Ana', type: 'person' })
    const bea = await created(t, salon, '/reservation-resources', { name: 'Bea', type: 'person' })
    for (let day = 1; day <= 6; day++) {
      await created(t, salon, '/reservation-resource-availability', { resource_id: room.id, day_of_week: day, start_time: '08:00', end_time: '20:00' })
      for (const stylist of [ana, bea]) {
        await created(t, salon, '/reservation-resource-availability', { resource_id: stylist.id, day_of_week: day, start_time: '09:00', end_time: '13:00' })
        await created(t, salon, '/reservation-resource-availability', { resource_id: stylist.id, day_of_week: day, start_time: '13:00', end_time: '17:00' })
      }
    }
    await link(t, salon, cut.id, room.id, true)
    await link(t, salon, cut.id, ana.id, false)
    await link(t, salon, cut.id, bea.id, false)

    const sunday = nextClockChange(3, ZONE)
    const week = Array.from({ length: 7 }, (_, i) => DateTime.fromISO(sunday).minus({ days: 3 }).plus({ days: i }).toISODate()!)
    const holiday = week[5] // the Tuesday after the change
    await created(t, salon, '/reservation-resource-exceptions', { resource_id: room.id, date: holiday, type: 'blocked', reason: 'local holiday' })

    const expectedStarts = (date: string) => Array.from({ length: 15 }, (_, i) => DateTime.fromISO(`${date}T09:00`, { zone: ZONE }).plus({ minutes: 30 * i }).toUTC().toISO())
    for (const date of week) {
      const res = await t.http().get('/reservation-available-slots').set(salon.key).query({ service_id: cut.id, date })
      expect(res.status).toBe(200)
      const starts = res.body.data.map((s: any) => s.start_datetime)
      if (date === sunday || date === holiday) expect(starts, date).toEqual([])
      else {
        expect(starts, date).toEqual(expectedStarts(date))
        expect(res.body.data[0].resource_ids).toEqual([ana.id, bea.id])
      }
    }
    // 09:00 in Madrid is 08:00Z before the change and 07:00Z after it.
    expect(at(week[2], '09:00', ZONE)).toBe(`${week[2]}T08:00:00.000Z`)
    expect(at(week[4], '09:00', ZONE)).toBe(`${week[4]}T07:00:00.000Z`)

    // Monday 10:00: one booking by API, one by the public page, then the assistant finds it full.
    const monday = week[4]
    const ten = at(monday, '10:00', ZONE)
    const customer = await contact(t, salon)
    const byApi = await t.http().post('/reservations').set(salon.key).send({ service_id: cut.id, contact_id: customer.id, start_datetime: ten, resource_id: ana.id })
    expect(byApi.status).toBe(201)
    await created(t, salon, '/reservation-booking-links', { slug: `salon-${salon.organization.id}`, name: 'Book', service_ids: [cut.id] })
    const byPage = await t.http().post(`/public/booking-links/salon-${salon.organization.id}/reservations`)
      .send({ service_id: cut.id, start_datetime: ten, contact: { first_name: 'Lola', email: 'lola@example.test' } })
    expect(byPage.status).toBe(201)
    const assistant = await created(t, salon, '/ai-assistants', { name: 'Desk', internal_tools: { tools: { create_reservation: { enabled: true } } } })
    const byAssistant = await t.http().post('/ai-assistant-tool-calls').set(salon.key)
      .send({ assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: cut.id, contact_id: customer.id, start_datetime: ten } })
    expect(byAssistant.status).toBe(409)
    const eleven = await t.http().post('/ai-assistant-tool-calls').set(salon.key)
      .send({ assistant_id: assistant.id, tool: 'create_reservation', arguments: { service_id: cut.id, contact_id: customer.id, start_datetime: at(monday, '11:00', ZONE) } })
    expect(eleven.status).toBe(201)

    // A rush for Saturday 12:00: two stylists, so exactly two of ten succeed.
    const saturday = week[2]
    const noon = at(saturday, '12:00', ZONE)
    const rush = await Promise.all(Array.from({ length: 10 }, () =>
      t.http().post('/reservations').set(salon.key).send({ service_id: cut.id, contact_id: customer.id, start_datetime: noon })))
    expect(rush.filter((r) => r.status === 201)).toHaveLength(2)
    expect(rush.filter((r) => r.status === 409)).toHaveLength(8)

    const all = await t.http().get('/reservations').set(salon.key).query({ $limit: 100, status: 'confirmed' })
    expect(all.body.data.map((r: any) => r.source).sort()).toEqual(['api', 'api', 'api', 'assistant', 'booking_link'])
    for (const stylist of [ana.id, bea.id]) {
      const mine = all.body.data.filter((r: any) => r.resource_id === stylist).sort((a: any, b: any) => a.start_datetime.localeCompare(b.start_datetime))
      for (let i = 1; i < mine.length; i++) expect(mine[i].start_datetime >= mine[i - 1].end_datetime).toBe(true)
    }
  })
})
