import { describe, it, expect } from 'vitest'
import { DateTime } from 'luxon'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { at, contact, created, inDays, link, nextClockChange, resourceWithHours, slotsOf } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('available slots', () => {
  let t: TestApp
  let acme: Tenant
  useApp({ tenants: ['Salon'] }, (app) => ({ t, tenants: [acme] } = app))

  /** A 30-minute service every 45 minutes with 15-minute buffers, on one resource open 09:00-12:00. */
  async function bufferedService(extra: Record<string, unknown> = {}) {
    const service = await created(t, acme, '/reservation-services', {
      name: 'Cut', duration_minutes: 30, slot_interval_minutes: 45, buffer_before_minutes: 15, buffer_after_minutes: 15, max_advance_days: 400, ...extra
    })
    const resource = await resourceWithHours(t, acme, { name: `Stylist ${service.id}` }, [['09:00', '12:00']])
    await link(t, acme, service.id, resource.id)
    return { service, resource }
  }

  it('when a resource is open 09:00-12:00 and the service steps by 45 minutes, then the starts are 09:00, 09:45, 10:30, 11:15 with ISO ms times', async () => {
    const { service, resource } = await bufferedService()
    const date = inDays(10)
    const res = await t.http().get('/reservation-available-slots').set(acme.key).query({ service_id: service.id, date })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ service_id: service.id, date, timezone: 'UTC' })
    expect(res.body.data).toEqual(['09:00', '09:45', '10:30', '11:15'].map((time) => ({
      start_datetime: at(date, time), end_datetime: DateTime.fromISO(at(date, time)).plus({ minutes: 30 }).toUTC().toISO(), resource_ids: [resource.id]
    })))
    expect(res.body.data[0].start_datetime).toMatch(ISO_MS)
  })

  it('when a reservation holds 09:45, then its buffers also remove 09:00 and 10:30, and cancelling it gives them back', async () => {
    const { service } = await bufferedService()
    const date = inDays(11)
    const person = await contact(t, acme)
    const booked = await created(t, acme, '/reservations', { service_id: service.id, contact_id: person.id, start_datetime: at(date, '09:45') })
    expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(date, '11:15')])
    const cancelled = await t.http().patch(`/reservations/${booked.id}`).set(acme.key).send({ status: 'cancelled' })
    expect(cancelled.status).toBe(200)
    expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual(['09:00', '09:45', '10:30', '11:15'].map((time) => at(date, time)))
  })

  it('when a blocked exception and special hours exist, then blocked time is removed and special hours replace the weekly hours', async () => {
    const { service, resource } = await bufferedService()
    const blockedDate = inDays(12)
    const specialDate = inDays(13)
    const holiday = inDays(14)
    await created(t, acme, '/reservation-resource-exceptions', { resource_id: resource.id, date: blockedDate, type: 'blocked', start_time: '11:00', end_time: '11:30', reason: 'meeting' })
    await created(t, acme, '/reservation-resource-exceptions', { resource_id: resource.id, date: specialDate, type: 'special_hours', start_time: '14:00', end_time: '15:00' })
    await created(t, acme, '/reservation-resource-exceptions', { resource_id: resource.id, date: holiday, type: 'blocked', reason: 'holiday' })
    expect(await slotsOf(t, acme, { service_id: service.id, date: blockedDate })).toEqual(['09:00', '09:45', '10:30'].map((time) => at(blockedDate, time)))
    expect(await slotsOf(t, acme, { service_id: service.id, date: specialDate })).toEqual([at(specialDate, '14:00')])
    expect(await slotsOf(t, acme, { service_id: service.id, date: holiday })).toEqual([])
  })

  it('when min notice ends just before 10:00 of a day, then 09:00 is not offered and 10:00 is', async () => {
    const date = inDays(2)
    const tenOClock = DateTime.fromISO(`${date}T10:00`, { zone: 'UTC' }).toMillis()
    const notice = Math.floor((tenOClock - 30_000 - Date.now()) / 60_000)
    const service = await created(t, acme, '/reservation-services', { name: 'Notice', duration_minutes: 60, min_notice_minutes: notice })
    const resource = await resourceWithHours(t, acme, { name: 'Noticed' }, [['09:00', '12:00']])
    await link(t, acme, service.id, resource.id)
    expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(date, '10:00'), at(date, '11:00')])
  })

  it('when a date is past, or beyond max_advance_days, then no slots; an inactive service → 400', async () => {
    const service = await created(t, acme, '/reservation-services', { name: 'Soon', duration_minutes: 60, max_advance_days: 3 })
    const resource = await resourceWithHours(t, acme, { name: 'Always' }, [['00:00', '24:00']])
    await link(t, acme, service.id, resource.id)
    expect(await slotsOf(t, acme, { service_id: service.id, date: inDays(-1) })).toEqual([])
    expect(await slotsOf(t, acme, { service_id: service.id, date: inDays(5) })).toEqual([])
    expect((await slotsOf(t, acme, { service_id: service.id, date: inDays(2) })).length).toBe(24)
    const today = await slotsOf(t, acme, { service_id: service.id, date: inDays(0) })
    expect(today.every((start) => Date.parse(start) >= Date.now() - 1000)).toBe(true)
    await t.http().patch(`/reservation-services/${service.id}`).set(acme.key).send({ is_active: false }).expect(200)
    const inactive = await t.http().get('/reservation-available-slots').set(acme.key).query({ service_id: service.id, date: inDays(2) })
    expect(inactive.status).toBe(400)
    expect(inactive.body.errors).toEqual({ service_id: 'is not active' })
  })

  it('when Europe/Madrid moves its clocks, then a 09:00-17:00 resource still offers 09:00-17:00 local time', async () => {
    const service = await created(t, acme, '/reservation-services', { name: 'Madrid', duration_minutes: 60, timezone: 'Europe/Madrid', max_advance_days: 400 })
    const resource = await resourceWithHours(t, acme, { name: 'Madrid stylist', timezone: 'Europe/Madrid' }, [['09:00', '17:00']])
    await link(t, acme, service.id, resource.id)
    for (const date of [nextClockChange(3), nextClockChange(10)]) {
      const expected = ['09', '10', '11', '12', '13', '14', '15', '16'].map((h) => at(date, `${h}:00`, 'Europe/Madrid'))
      const slots = await slotsOf(t, acme, { service_id: service.id, date })
      expect(slots).toEqual(expected)
      const dayBefore = DateTime.fromISO(date).minus({ days: 1 }).toISODate()!
      const before = await slotsOf(t, acme, { service_id: service.id, date: dayBefore })
      // Same wall clock, an hour apart in UTC across the change.
      expect(DateTime.fromISO(before[0], { zone: 'Europe/Madrid' }).toFormat('HH:mm')).toBe('09:00')
      expect(Math.abs(DateTime.fromISO(before[0]).hour - DateTime.fromISO(slots[0]).hour)).toBe(1)
    }
    const spring = nextClockChange(3)
    expect((await slotsOf(t, acme, { service_id: service.id, date: spring }))[0]).toBe(`${spring}T07:00:00.000Z`)
  })

  it('when the service and the resource are in different time zones, then the date is the service\'s and the hours the resource\'s', async () => {
    const service = await created(t, acme, '/reservation-services', { name: 'Remote', duration_minutes: 60, timezone: 'America/New_York', max_advance_days: 400 })
    const resource = await resourceWithHours(t, acme, { name: 'Tokyo desk', timezone: 'Asia/Tokyo' }, [['09:00', '11:00']])
    await link(t, acme, service.id, resource.id)
    const date = inDays(20, 'America/New_York')
    // Tokyo 09:00 of the next Tokyo day is 19:00 or 20:00 in New York on `date`.
    const next = DateTime.fromISO(date).plus({ days: 1 }).toISODate()!
    expect(await slotsOf(t, acme, { service_id: service.id, date })).toEqual([at(next, '09:00', 'Asia/Tokyo'), at(next, '10:00', 'Asia/Tokyo')])
  })

  it('when the organization time zone changes, then resources without their own zone follow it', async () => {
    const tenant = await createTenant(t, 'Zoned')
    await t.http().patch(`/organizations/${tenant.organization.id}`).set(tenant.bearer).send({ timezone: 'Europe/Madrid' }).expect(200)
    const service = await created(t, tenant, '/reservation-services', { name: 'Local', duration_minutes: 60 })
    const resource = await resourceWithHours(t, tenant, { name: 'Local stylist' }, [['09:00', '10:00']])
    await link(t, tenant, service.id, resource.id)
    const date = inDays(7, 'Europe/Madrid')
    const res = await t.http().get('/reservation-available-slots').set(tenant.key).query({ service_id: service.id, date })
    expect(res.body.timezone).toBe('Europe/Madrid')
    expect(res.body.data.map((s: any) => s.start_datetime)).toEqual([at(date, '09:00', 'Europe/Madrid')])
  })

  it('when required resources and alternatives are linked, then a slot needs every required one and lists the free alternatives', async () => {
    const service = await created(t, acme, '/reservation-services', { name: 'Color', duration_minutes: 60, max_advance_days: 400 })
    const room = await resourceWithHours(t, acme, { name: 'Room', type: 'room' }, [['09:00', '11:00']])
    const ana = await resourceWithHours(t, acme, { name: 'Ana' }, [['09:00', '12:00']])
    const bea = await resourceWithHours(t, acme, { name: 'Bea' }, [['10:00', '12:00']])
    await link(t, acme, service.id, room.id, true)
    await link(t, acme, service.id, ana.id, false)
    await link(t, acme, service.id, bea.id, false)
    const date = inDays(15)
    const res = await t.http().get('/reservation-available-slots').set(acme.key).query({ service_id: service.id, date })
    expect(res.body.data.map((s: any) => [s.start_datetime, s.resource_ids])).toEqual([
      [at(date, '09:00'), [ana.id]],
      [at(date, '10:00'), [ana.id, bea.id]]
    ])
    const onlyBea = await slotsOf(t, acme, { service_id: service.id, date, resource_id: bea.id })
    expect(onlyBea).toEqual([at(date, '10:00')])
    const stranger = await created(t, acme, '/reservation-resources', { name: 'Unlinked', type: 'room' })
    const unlinked = await t.http().get('/reservation-available-slots').set(acme.key).query({ service_id: service.id, date, resource_id: stranger.id })
    expect(unlinked.status).toBe(400)
    expect(unlinked.body.errors).toHaveProperty('resource_id')
  })

  it('when a query misses service_id or has a bad date, then 400 naming the field', async () => {
    const missing = await t.http().get('/reservation-available-slots').set(acme.key).query({ date: inDays(1) })
    expect(missing.status).toBe(400)
    expect(missing.body.errors).toHaveProperty('service_id')
    const bad = await t.http().get('/reservation-available-slots').set(acme.key).query({ service_id: 1, date: '2026-02-30' })
    expect(bad.status).toBe(400)
    expect(bad.body.errors).toHaveProperty('date')
  })
})
