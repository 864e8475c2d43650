/**
 * Slot query timing: a service with 5 resources (one required room, four stylists as
 * alternatives), weekly hours with exceptions, and a few hundred reservations over a month; then
 * every date of that month is queried through the service layer (hooks, validation, queries and
 * computation; no HTTP). Prints median, p95 and max per query.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/crm_bench npx tsx bench/reservations-slots.ts
 *   DATABASE_URL= npx tsx bench/reservations-slots.ts          (embedded Postgres in memory)
 */
import os from 'node:os'
import path from 'node:path'
import { DateTime } from 'luxon'
import { createApp } from '../src/app.js'
import { MEMORY_DATABASE, migrate } from '../src/db.js'

const RESERVATIONS = 400
const ROUNDS = 5

const databaseUrl = process.env.DATABASE_URL || MEMORY_DATABASE
const app = await createApp({ databaseUrl, dataDir: path.join(os.tmpdir(), 'crm-bench-slots'), logLevel: 'warn' })
const db = app.get('knex')
await migrate(db)
await app.setup()
const system = { system: true } as const

try {
  const [organization] = await db('organizations').insert({ name: `Slots bench ${Date.now()}`, timezone: 'Europe/Madrid' }).returning('*')
  const organization_id = organization.id
  const service = await app.service('reservation-services').create(
    { organization_id, name: 'Cut', duration_minutes: 30, slot_interval_minutes: 15, buffer_before_minutes: 5, buffer_after_minutes: 5, max_advance_days: 60 },
    system
  )
  const room = await app.service('reservation-resources').create({ organization_id, name: 'Room', type: 'room', capacity: 4 }, system)
  const stylists = []
  for (let i = 0; i < 4; i++) stylists.push(await app.service('reservation-resources').create({ organization_id, name: `Stylist ${i}`, type: 'person' }, system))
  await app.service('reservation-service-resources').create({ organization_id, service_id: service.id, resource_id: room.id, is_required: true }, system)
  for (const stylist of stylists) {
    await app.service('reservation-service-resources').create({ organization_id, service_id: service.id, resource_id: stylist.id, is_required: false }, system)
  }
  for (const resource of [room, ...stylists]) {
    for (let day = 1; day <= 6; day++) {
      await app.service('reservation-resource-availability').create({ organization_id, resource_id: resource.id, day_of_week: day, start_time: '09:00', end_time: '13:30' }, system)
      await app.service('reservation-resource-availability').create({ organization_id, resource_id: resource.id, day_of_week: day, start_time: '15:00', end_time: '19:00' }, system)
    }
  }
  const first = DateTime.now().setZone('Europe/Madrid').plus({ days: 1 }).startOf('day')
  const dates = Array.from({ length: 30 }, (_, i) => first.plus({ days: i }).toISODate()!)
  for (const [i, stylist] of stylists.entries()) {
    await app.service('reservation-resource-exceptions').create({ organization_id, resource_id: stylist.id, date: dates[3 + i * 5], type: 'blocked', reason: 'day off' }, system)
  }
  const [contact] = await db('contacts').insert({ organization_id, first_name: 'Bench' }).returning('*')

  // A few hundred bookings spread over the month, each at a start the engine offers.
  let booked = 0
  for (let attempt = 0; booked < RESERVATIONS && attempt < RESERVATIONS * 4; attempt++) {
    const date = dates[attempt % dates.length]
    const slots = await app.service('reservation-available-slots').find({ ...system, query: { organization_id, service_id: service.id, date } })
    if (slots.data.length === 0) continue
    const slot = slots.data[(attempt * 7) % slots.data.length]
    await app.service('reservations').create({ organization_id, service_id: service.id, contact_id: contact.id, start_datetime: slot.start_datetime }, system)
    booked++
  }

  const timings: number[] = []
  let slotCount = 0
  for (let round = 0; round < ROUNDS; round++) {
    for (const date of dates) {
      const started = process.hrtime.bigint()
      const slots = await app.service('reservation-available-slots').find({ ...system, query: { organization_id, service_id: service.id, date } })
      timings.push(Number(process.hrtime.bigint() - started) / 1e6)
      if (round === 0) slotCount += slots.data.length
    }
  }
  timings.sort((a, b) => a - b)
  const at = (q: number) => timings[Math.min(timings.length - 1, Math.floor(q * timings.length))].toFixed(2)
  console.log(JSON.stringify({
    database: databaseUrl === MEMORY_DATABASE ? 'embedded (PGlite, in memory)' : 'PostgreSQL server',
    resources: 5, reservations: booked, dates: dates.length, queries: timings.length, slots_in_month: slotCount,
    ms: { median: at(0.5), p95: at(0.95), max: timings[timings.length - 1].toFixed(2) }
  }, null, 2))
  await db('organizations').where({ id: organization_id }).delete()
} finally {
  await app.teardown()
}
