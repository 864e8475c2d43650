import { DateTime } from 'luxon'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'

/** POST through HTTP and insist on 201 (fixtures must not hide a failure). */
export async function created(t: TestApp, tenant: Tenant, path: string, body: Record<string, unknown>) {
  const res = await t.http().post(path).set(tenant.key).send(body)
  if (res.status !== 201) throw new Error(`POST ${path} → ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

export const contact = (t: TestApp, tenant: Tenant, fields: Record<string, unknown> = {}) =>
  created(t, tenant, '/contacts', { first_name: 'Carmen', last_name: 'Vidal', email: `carmen-${Math.random().toString(36).slice(2, 8)}@example.test`, ...fields })

/** A resource with the same hours every day of the week. */
export async function resourceWithHours(t: TestApp, tenant: Tenant, fields: Record<string, unknown>, hours: [string, string][]) {
  const resource = await created(t, tenant, '/reservation-resources', { type: 'person', ...fields })
  for (let day = 0; day <= 6; day++) {
    for (const [start_time, end_time] of hours) {
      await created(t, tenant, '/reservation-resource-availability', { resource_id: resource.id, day_of_week: day, start_time, end_time })
    }
  }
  return resource
}

export const link = (t: TestApp, tenant: Tenant, service_id: number, resource_id: number, is_required = true, quantity = 1) =>
  created(t, tenant, '/reservation-service-resources', { service_id, resource_id, is_required, quantity })

/** A public booking link (slug) for one new 60-minute service with one resource open 09:00-17:00 every day. */
export async function bookableLink(t: TestApp, tenant: Tenant, slug: string) {
  const service = await created(t, tenant, '/reservation-services', { name: 'Session', duration_minutes: 60, max_advance_days: 400 })
  const resource = await resourceWithHours(t, tenant, { name: 'Ana' }, [['09:00', '17:00']])
  await link(t, tenant, service.id, resource.id)
  await created(t, tenant, '/reservation-booking-links', { slug, name: 'Book', service_ids: [service.id] })
  return { service, slug }
}

/** A calendar date `days` after today (UTC). */
export const inDays = (days: number, zone = 'UTC') => DateTime.now().setZone(zone).plus({ days }).toISODate()!

/** An instant on a date, wall clock in a zone, as the API prints it. */
export const at = (date: string, time: string, zone = 'UTC') =>
  DateTime.fromISO(`${date}T${time}`, { zone }).toUTC().toISO()!

export const slotsOf = async (t: TestApp, tenant: Tenant, query: Record<string, unknown>) => {
  const res = await t.http().get('/reservation-available-slots').set(tenant.key).query(query)
  if (res.status !== 200) throw new Error(`slots → ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.data.map((slot: { start_datetime: string }) => slot.start_datetime) as string[]
}

/** The next date on which Europe/Madrid (or `zone`) moves its clocks, in `month` (3 or 10). */
export function nextClockChange(month: 3 | 10, zone = 'Europe/Madrid') {
  const now = DateTime.now().setZone(zone)
  for (let year = now.year; ; year++) {
    // The last Sunday of the month.
    let day = DateTime.fromObject({ year, month, day: 1 }, { zone }).endOf('month').startOf('day')
    while (day.weekday !== 7) day = day.minus({ days: 1 })
    if (day > now.plus({ days: 2 })) return day.toISODate()!
  }
}
