import { describe, expect, it } from 'vitest'
import { BadRequest } from '@feathersjs/errors'
import { checkPartySize, needsFor } from '../../src/services/reservations/slot-data.js'
import type { ServiceContext } from '../../src/services/reservations/slot-data.js'
import { bookableRange, computeSlots, dayRange, heldRange, serviceDateOf } from '../../src/services/reservations/slots.js'
import type { Allocation, ResourceException, SlotInput, SlotNeed, SlotResource, SlotService, WeeklyWindow } from '../../src/services/reservations/slots.js'

// The slot engine without a database: rows in, instants out, shown as the API writes them.
const MINUTE = 60_000
const WEDNESDAY = '2026-06-10'
// The European Union's clock changes of 2026 (Sundays): 02:00 → 03:00 and 03:00 → 02:00.
const SPRING_FORWARD = '2026-03-29'
const FALL_BACK = '2026-10-25'
const LONG_AGO = Date.parse('2026-01-01T00:00:00Z')

const service = (overrides: Partial<SlotService> = {}): SlotService => ({
  id: 1,
  duration_minutes: 30,
  slot_interval_minutes: 30,
  buffer_before_minutes: 0,
  buffer_after_minutes: 0,
  min_notice_minutes: 0,
  max_advance_days: 365,
  max_party_size: null,
  timezone: 'UTC',
  ...overrides
})
const resource = (id: number, overrides: Partial<SlotResource> = {}): SlotResource => ({ id, capacity: 1, timezone: 'UTC', ...overrides })
const required = (of: SlotResource, quantity = 1): SlotNeed => ({ resource: of, required: true, quantity })
const alternative = (of: SlotResource, quantity = 1): SlotNeed => ({ resource: of, required: false, quantity })
/** The same hours on every day of the week. */
const everyDay = (resourceId: number, start_time: string, end_time: string): WeeklyWindow[] =>
  [0, 1, 2, 3, 4, 5, 6].map((day_of_week) => ({ resource_id: resourceId, day_of_week, start_time, end_time }))
const instant = (date: string, time: string) => Date.parse(`${date}T${time}:00Z`)
const utc = (date: string, ...times: string[]) => times.map((time) => `${date}T${time}:00.000Z`)
/** An active reservation's hold on one unit, over its buffered range. */
const held = (resourceId: number, [start, end]: [number, number], unit = 0): Allocation => ({ resource_id: resourceId, unit, start, end, reservation_id: 1 })

const STYLIST = resource(1)

/** The starts offered, as ISO text; by default one stylist open 09:00-12:00 UTC every day, 30-minute steps. */
function starts(input: Partial<SlotInput> = {}) {
  return computeSlots({
    service: service(),
    needs: [required(STYLIST)],
    date: WEDNESDAY,
    now: LONG_AGO,
    partySize: 1,
    weekly: everyDay(STYLIST.id, '09:00', '12:00'),
    exceptions: [],
    allocations: [],
    ...input
  }).map((slot) => new Date(slot.start).toISOString())
}

describe('slots: the grid', () => {
  it('when a resource is open 09:00-12:00 and a 30-minute service steps by 45 minutes, then the starts are 09:00, 09:45, 10:30 and 11:15', () => {
    expect(starts({ service: service({ slot_interval_minutes: 45 }) })).toEqual(utc(WEDNESDAY, '09:00', '09:45', '10:30', '11:15'))
  })

  it('when a slot would end after closing time, then it is not offered, and one that ends exactly at closing is', () => {
    expect(starts({ service: service({ duration_minutes: 50, slot_interval_minutes: 60 }) })).toEqual(utc(WEDNESDAY, '09:00', '10:00', '11:00'))
    expect(starts({ service: service({ duration_minutes: 61, slot_interval_minutes: 60 }) })).toEqual(utc(WEDNESDAY, '09:00', '10:00'))
  })

  it('when two weekly windows touch (09:00-11:00 and 11:00-13:00), then they step as one stretch and a slot may span the join', () => {
    const weekly = [...everyDay(STYLIST.id, '09:00', '11:00'), ...everyDay(STYLIST.id, '11:00', '13:00')]
    expect(starts({ service: service({ duration_minutes: 90, slot_interval_minutes: 60 }), weekly })).toEqual(utc(WEDNESDAY, '09:00', '10:00', '11:00'))
  })

  it('when a window ends at 24:00, then its last slot ends at midnight', () => {
    expect(starts({ service: service({ duration_minutes: 60, slot_interval_minutes: 60 }), weekly: everyDay(STYLIST.id, '22:00', '24:00') })).toEqual(utc(WEDNESDAY, '22:00', '23:00'))
  })

  it('when the resource has no hours on the weekday, or its window ends before it starts, then no slots', () => {
    const tuesdaysOnly = everyDay(STYLIST.id, '09:00', '12:00').filter((window) => window.day_of_week === 2)
    expect(starts({ weekly: tuesdaysOnly })).toEqual([])
    expect(starts({ weekly: everyDay(STYLIST.id, '12:00', '09:00') })).toEqual([])
  })

  it('when a slot is offered, then it ends duration_minutes after its start', () => {
    const [first] = computeSlots({
      service: service({ duration_minutes: 45 }), needs: [required(STYLIST)], date: WEDNESDAY, now: LONG_AGO, partySize: 1,
      weekly: everyDay(STYLIST.id, '09:00', '12:00'), exceptions: [], allocations: []
    })
    expect({ start: new Date(first.start).toISOString(), end: new Date(first.end).toISOString(), resource_ids: first.resource_ids })
      .toEqual({ start: '2026-06-10T09:00:00.000Z', end: '2026-06-10T09:45:00.000Z', resource_ids: [STYLIST.id] })
  })
})

describe('slots: buffers and held units', () => {
  const buffered = service({ duration_minutes: 30, slot_interval_minutes: 45, buffer_before_minutes: 15, buffer_after_minutes: 15 })

  it('when a booking holds 09:45 with 15-minute buffers, then the buffers also remove 09:00 and 10:30, and 11:15 stays', () => {
    const allocations = [held(STYLIST.id, heldRange(buffered, instant(WEDNESDAY, '09:45')))]
    expect(starts({ service: buffered, allocations })).toEqual(utc(WEDNESDAY, '11:15'))
  })

  it('when a booking ends exactly where a slot starts, then the slot is free; with a one-minute buffer before it, it is not', () => {
    const allocations = [held(STYLIST.id, [instant(WEDNESDAY, '09:00'), instant(WEDNESDAY, '09:30')])]
    expect(starts({ allocations })).toEqual(utc(WEDNESDAY, '09:30', '10:00', '10:30', '11:00', '11:30'))
    expect(starts({ service: service({ buffer_before_minutes: 1 }), allocations })).toEqual(utc(WEDNESDAY, '10:00', '10:30', '11:00', '11:30'))
  })

  it('when the buffered range is computed, then it is [start - buffer before, start + duration + buffer after)', () => {
    const range = heldRange(service({ duration_minutes: 30, buffer_before_minutes: 15, buffer_after_minutes: 10 }), instant(WEDNESDAY, '10:00'))
    expect(range.map((edge) => new Date(edge).toISOString())).toEqual(['2026-06-10T09:45:00.000Z', '2026-06-10T10:40:00.000Z'])
  })

  it('when a resource has 3 units and a party of 2 needs one unit each, then a slot needs 2 free units', () => {
    const chairs = resource(7, { capacity: 3 })
    const at9 = [instant(WEDNESDAY, '09:00'), instant(WEDNESDAY, '09:30')] as [number, number]
    const input = { needs: [required(chairs)], weekly: everyDay(chairs.id, '09:00', '10:00'), partySize: 2 }
    const oneHeld = computeSlots({ service: service(), date: WEDNESDAY, now: LONG_AGO, exceptions: [], allocations: [held(chairs.id, at9, 0)], ...input })
    expect(oneHeld.map((slot) => [new Date(slot.start).toISOString(), slot.freeUnits.get(chairs.id)])).toEqual([
      ['2026-06-10T09:00:00.000Z', [1, 2]],
      ['2026-06-10T09:30:00.000Z', [0, 1, 2]]
    ])
    expect(starts({ ...input, allocations: [held(chairs.id, at9, 0), held(chairs.id, at9, 2)] })).toEqual(utc(WEDNESDAY, '09:30'))
  })

  it('when a unit is held on another resource, then it does not count against this one', () => {
    expect(starts({ allocations: [held(99, [instant(WEDNESDAY, '09:00'), instant(WEDNESDAY, '12:00')])] })).toHaveLength(6)
  })
})

describe('slots: notice and advance', () => {
  it('when min notice ends at 09:20, then 09:00 is not offered and 09:30 is; when it ends exactly at 09:30, then 09:30 is offered', () => {
    const hour = service({ min_notice_minutes: 60 })
    expect(starts({ service: hour, now: instant(WEDNESDAY, '08:20') })).toEqual(utc(WEDNESDAY, '09:30', '10:00', '10:30', '11:00', '11:30'))
    expect(starts({ service: hour, now: instant(WEDNESDAY, '08:30') })[0]).toBe('2026-06-10T09:30:00.000Z')
  })

  it('when max_advance_days ends at 10:00 of the date, then 10:00 is the last start offered', () => {
    const now = instant('2026-06-01', '10:00')
    expect(starts({ service: service({ max_advance_days: 9 }), now })).toEqual(utc(WEDNESDAY, '09:00', '09:30', '10:00'))
    expect(starts({ service: service({ max_advance_days: 8 }), now })).toEqual([])
  })

  it('when the date is past, then no slots', () => {
    expect(starts({ now: instant('2026-06-11', '08:00') })).toEqual([])
  })

  it('when the bookable range is asked, then it is the local day cut by now + min notice and now + max advance', () => {
    const range = bookableRange(service({ min_notice_minutes: 90, max_advance_days: 1, timezone: 'Europe/Madrid' }), WEDNESDAY, instant(WEDNESDAY, '06:00'))
    expect(range).toEqual([instant(WEDNESDAY, '07:30'), instant(WEDNESDAY, '22:00')])
  })
})

describe('slots: time zones and clock changes', () => {
  const madrid = resource(2, { timezone: 'Europe/Madrid' })
  const inMadrid = (date: string, weekly: WeeklyWindow[], exceptions: ResourceException[] = []) =>
    starts({ service: service({ duration_minutes: 60, slot_interval_minutes: 60, timezone: 'Europe/Madrid' }), needs: [required(madrid)], date, weekly, exceptions })

  it('when Madrid moves its clocks forward, then a 09:00-17:00 resource still offers 09:00-16:00 local time, an hour earlier in UTC than the day before', () => {
    const nineToFive = everyDay(madrid.id, '09:00', '17:00')
    expect(inMadrid('2026-03-28', nineToFive)).toEqual(utc('2026-03-28', '08:00', '09:00', '10:00', '11:00', '12:00', '13:00', '14:00', '15:00'))
    expect(inMadrid(SPRING_FORWARD, nineToFive)).toEqual(utc(SPRING_FORWARD, '07:00', '08:00', '09:00', '10:00', '11:00', '12:00', '13:00', '14:00'))
  })

  it('when a window spans the hour the clocks skip (01:00-04:00 local), then it holds two real hours', () => {
    expect(inMadrid(SPRING_FORWARD, everyDay(madrid.id, '01:00', '04:00'))).toEqual(utc(SPRING_FORWARD, '00:00', '01:00'))
  })

  it('when a window spans the hour the clocks repeat (01:00-04:00 local), then it holds four real hours', () => {
    expect(inMadrid(FALL_BACK, everyDay(madrid.id, '01:00', '04:00'))).toEqual([
      '2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z'
    ])
  })

  it('when a blocked exception covers only the hour the clocks skip, then it removes nothing', () => {
    const blocked: ResourceException[] = [{ resource_id: madrid.id, date: SPRING_FORWARD, type: 'blocked', start_time: '02:00', end_time: '03:00' }]
    expect(inMadrid(SPRING_FORWARD, everyDay(madrid.id, '01:00', '04:00'), blocked)).toEqual(utc(SPRING_FORWARD, '00:00', '01:00'))
  })

  it('when clocks change, then the local day lasts 23 or 25 hours', () => {
    const hours = (date: string) => {
      const [start, end] = dayRange(date, 'Europe/Madrid')
      return (end - start) / (60 * MINUTE)
    }
    expect([hours('2026-03-28'), hours(SPRING_FORWARD), hours(FALL_BACK)]).toEqual([24, 23, 25])
  })

  it('when the service is in Auckland and the resource in UTC, then the date is Auckland\'s and the hours are UTC\'s, from two UTC dates', () => {
    const slots = starts({ service: service({ duration_minutes: 60, slot_interval_minutes: 60, timezone: 'Pacific/Auckland' }), weekly: everyDay(STYLIST.id, '09:00', '17:00') })
    expect(slots).toEqual([...utc('2026-06-09', '12:00', '13:00', '14:00', '15:00', '16:00'), ...utc(WEDNESDAY, '09:00', '10:00', '11:00')])
  })

  it('when the resource is in Tokyo and the service in UTC, then 09:00-12:00 Tokyo time is 00:00-03:00 UTC', () => {
    const tokyo = resource(3, { timezone: 'Asia/Tokyo' })
    expect(starts({ needs: [required(tokyo)], weekly: everyDay(tokyo.id, '09:00', '12:00') })).toEqual(utc(WEDNESDAY, '00:00', '00:30', '01:00', '01:30', '02:00', '02:30'))
  })

  it('when an instant is near midnight, then its service date is the local one', () => {
    const lateSaturday = Date.parse('2026-03-28T23:30:00Z')
    expect(serviceDateOf(service({ timezone: 'Europe/Madrid' }), lateSaturday)).toBe(SPRING_FORWARD)
    expect(serviceDateOf(service({ timezone: 'America/New_York' }), lateSaturday)).toBe('2026-03-28')
    expect(serviceDateOf(service(), lateSaturday)).toBe('2026-03-28')
  })
})

describe('slots: exceptions', () => {
  const hourly = service({ duration_minutes: 60, slot_interval_minutes: 30 })
  const exception = (overrides: Partial<ResourceException>): ResourceException => ({
    resource_id: STYLIST.id, date: WEDNESDAY, type: 'blocked', start_time: null, end_time: null, ...overrides
  })

  it('when 10:00-11:00 is blocked, then every slot overlapping it goes and 09:00 and 11:00 stay', () => {
    expect(starts({ service: hourly, exceptions: [exception({ start_time: '10:00', end_time: '11:00' })] })).toEqual(utc(WEDNESDAY, '09:00', '11:00'))
  })

  it('when a block overlaps the opening (08:00-09:30), then the grid keeps its 09:00 steps and the first slot is 09:30', () => {
    expect(starts({ service: hourly, exceptions: [exception({ start_time: '08:00', end_time: '09:30' })] })).toEqual(utc(WEDNESDAY, '09:30', '10:00', '10:30', '11:00'))
  })

  it('when a block has no times, then the whole local day is blocked', () => {
    expect(starts({ exceptions: [exception({})] })).toEqual([])
  })

  it('when a block is on another date or another resource, then it changes nothing', () => {
    const elsewhere = [exception({ date: '2026-06-11' }), exception({ resource_id: 99 })]
    expect(starts({ service: hourly, exceptions: elsewhere })).toEqual(utc(WEDNESDAY, '09:00', '09:30', '10:00', '10:30', '11:00'))
  })

  it('when special hours (13:00-15:00) exist, then they replace the weekly hours of that date', () => {
    expect(starts({ exceptions: [exception({ type: 'special_hours', start_time: '13:00', end_time: '15:00' })] })).toEqual(utc(WEDNESDAY, '13:00', '13:30', '14:00', '14:30'))
  })

  it('when special hours fall on a day without weekly hours, then the resource is open then', () => {
    const weekdays = everyDay(STYLIST.id, '09:00', '12:00').filter((window) => window.day_of_week !== 3)
    const special = [exception({ type: 'special_hours', start_time: '16:00', end_time: '17:00' })]
    expect(starts({ weekly: weekdays, exceptions: special })).toEqual(utc(WEDNESDAY, '16:00', '16:30'))
  })

  it('when special hours and a block fall on one date, then the block removes time from the special hours', () => {
    const exceptions = [
      exception({ type: 'special_hours', start_time: '13:00', end_time: '15:00' }),
      exception({ type: 'special_hours', start_time: '16:00', end_time: '17:00' }),
      exception({ start_time: '13:30', end_time: '14:30' })
    ]
    expect(starts({ exceptions })).toEqual(utc(WEDNESDAY, '13:00', '14:30', '16:00', '16:30'))
  })
})

describe('slots: several resources', () => {
  const room = resource(10)
  const ana = resource(11)
  const bruno = resource(12)
  const weekly = [...everyDay(room.id, '09:00', '12:00'), ...everyDay(ana.id, '09:00', '12:00'), ...everyDay(bruno.id, '10:00', '11:00')]
  const slotsWith = (allocations: Allocation[]) =>
    computeSlots({ service: service(), needs: [required(room), alternative(ana), alternative(bruno)], date: WEDNESDAY, now: LONG_AGO, partySize: 1, weekly, exceptions: [], allocations })
      .map((slot) => [new Date(slot.start).toISOString().slice(11, 16), slot.resource_ids])

  it('when a room is required and two people are alternatives, then a slot needs the room and lists the free people', () => {
    const at = (time: string): [number, number] => [instant(WEDNESDAY, time), instant(WEDNESDAY, time) + 30 * MINUTE]
    expect(slotsWith([held(ana.id, at('10:00')), held(room.id, at('11:00'))])).toEqual([
      ['09:00', [ana.id]],
      ['09:30', [ana.id]],
      ['10:00', [bruno.id]],
      ['10:30', [ana.id, bruno.id]],
      ['11:30', [ana.id]]
    ])
  })

  it('when every alternative is held, then the slot is not offered even though the room is free', () => {
    const nineToTwelve: [number, number] = [instant(WEDNESDAY, '09:00'), instant(WEDNESDAY, '12:00')]
    expect(slotsWith([held(ana.id, nineToTwelve), held(bruno.id, nineToTwelve)])).toEqual([])
  })

  it('when there are no needs, then no slots', () => {
    expect(starts({ needs: [] })).toEqual([])
  })
})

describe('slots: what a query needs', () => {
  const room = resource(20, { capacity: 4 })
  const ana = resource(21, { capacity: 1 })
  const bruno = resource(22, { capacity: 2 })
  const context = (needs: SlotNeed[], max_party_size: number | null = null): ServiceContext => ({
    organizationId: 1,
    service: { ...service({ max_party_size }), name: 'Cut', is_active: true, requires_confirmation: false },
    needs
  })
  const salon = context([required(room), alternative(ana), alternative(bruno)])
  /** The field errors of a BadRequest the call throws, or undefined when it does not throw. */
  const fieldErrors = (call: () => unknown) => {
    try {
      call()
    } catch (error) {
      expect(error).toBeInstanceOf(BadRequest)
      return (error as BadRequest).errors
    }
    return undefined
  }

  it('when a query names an alternative, then it needs the required resources and that alternative only', () => {
    expect(needsFor(salon, bruno.id).map((need) => need.resource.id)).toEqual([room.id, bruno.id])
  })

  it('when a query names a required resource or none, then it needs everything linked', () => {
    expect(needsFor(salon, room.id).map((need) => need.resource.id)).toEqual([room.id, ana.id, bruno.id])
    expect(needsFor(salon).map((need) => need.resource.id)).toEqual([room.id, ana.id, bruno.id])
  })

  it('when a query names a resource the service does not use, then 400 naming resource_id', () => {
    expect(fieldErrors(() => needsFor(salon, 99))).toEqual({ resource_id: 'is not an active resource of this service' })
  })

  it('when the party is above max_party_size, then 400 naming party_size; at the maximum, nothing is thrown', () => {
    const capped = context([required(room)], 3)
    expect(fieldErrors(() => checkPartySize(capped, capped.needs, 4))).toEqual({ party_size: 'must be at most 3 for this service' })
    expect(fieldErrors(() => checkPartySize(capped, capped.needs, 3))).toBeUndefined()
  })

  it('when a required resource cannot hold the party at once, then 400 naming party_size', () => {
    const twoEach = context([required(room, 2)])
    expect(fieldErrors(() => checkPartySize(twoEach, twoEach.needs, 2))).toBeUndefined()
    expect(fieldErrors(() => checkPartySize(twoEach, twoEach.needs, 3))).toEqual({ party_size: 'is more than the resources of this service can take at once' })
  })

  it('when one alternative can hold the party, then it fits; when none can, then 400 naming party_size', () => {
    expect(fieldErrors(() => checkPartySize(salon, salon.needs, 2))).toBeUndefined()
    expect(fieldErrors(() => checkPartySize(salon, needsFor(salon, ana.id), 2))).toEqual({ party_size: 'is more than the resources of this service can take at once' })
  })
})
