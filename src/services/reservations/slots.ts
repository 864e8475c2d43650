import { DateTime } from 'luxon'
import { LRUCache } from 'lru-cache'

/**
 * The slot engine: which starts a service offers on one calendar date, computed from the
 * resources' wall-clock hours (in each resource's time zone), their exceptions and the units
 * already held by active reservations. Pure: the caller loads the rows (see slot-data.ts).
 *
 * Rules (docs/reservations.md explains them to users):
 * - `date` is a calendar date in the service's time zone; the day is [00:00, next 00:00) there.
 * - Weekly hours and exceptions are wall-clock times in the resource's time zone, turned into
 *   instants with Luxon for each local date, so a 09:00-17:00 day stays 09:00-17:00 local on
 *   the days clocks change.
 * - 'special_hours' exceptions replace that local date's weekly hours; 'blocked' ones remove
 *   time (the whole local day without times).
 * - Starts step by slot_interval_minutes from the start of each window of the grid resources
 *   (the alternatives when the service has any, otherwise its required resources).
 * - The service time [start, end) must lie inside the resource's hours (touching windows count
 *   as one stretch); the buffered range
 *   [start - buffer_before, end + buffer_after) must not overlap the buffered range of another
 *   active reservation on the units it takes.
 * - Nothing before now + min_notice, nothing after now + max_advance_days.
 */

const MINUTE = 60_000
const DAY = 86_400_000

export interface SlotService {
  id: number
  duration_minutes: number
  slot_interval_minutes: number
  buffer_before_minutes: number
  buffer_after_minutes: number
  min_notice_minutes: number
  max_advance_days: number
  max_party_size: number | null
  timezone: string
}

export interface SlotResource {
  id: number
  capacity: number
  timezone: string
}

/** One resource a service needs: every required one, or one of the alternatives. */
export interface SlotNeed {
  resource: SlotResource
  required: boolean
  /** Units per person of the party. */
  quantity: number
}

export interface WeeklyWindow { resource_id: number; day_of_week: number; start_time: string; end_time: string }
export interface ResourceException { resource_id: number; date: string; type: 'blocked' | 'special_hours'; start_time: string | null; end_time: string | null }
/** A unit held by an active reservation over its buffered range, as epoch milliseconds. */
export interface Allocation { resource_id: number; unit: number; start: number; end: number; reservation_id: number }

export interface SlotInput {
  service: SlotService
  needs: SlotNeed[]
  date: string
  now: number
  partySize: number
  weekly: WeeklyWindow[]
  exceptions: ResourceException[]
  allocations: Allocation[]
}

export interface Slot {
  start: number
  end: number
  /** Free alternatives at this start (or the required resources when there are none), by id. */
  resource_ids: number[]
  /** Units seen free on each needed resource, in the order to try them. */
  freeUnits: Map<number, number[]>
}

/** [start, end) instants, epoch milliseconds. */
type Span = [number, number]
/** A weekly or special window with the time that remains bookable inside it. */
interface Window { start: number; end: number; open: Span[] }

interface LocalDay {
  /** Local midnight and the next one, as instants (Luxon resolves midnights that DST skips). */
  start: number
  end: number
  /** UTC offsets (minutes) at both midnights: equal means no clock change during the day. */
  startOffset: number
  endOffset: number
}

// Time-zone arithmetic is the costly part of a slot query; a day's midnights and offsets are
// the same for every query, so the most recently used are kept per zone and date.
const localDays = new LRUCache<string, LocalDay>({ max: 20_000 })

function localDay(date: string, zone: string): LocalDay {
  const key = `${zone}|${date}`
  let day = localDays.get(key)
  if (!day) {
    const start = DateTime.fromISO(date, { zone }).startOf('day')
    const end = start.plus({ days: 1 }).startOf('day')
    day = { start: start.toMillis(), end: end.toMillis(), startOffset: start.offset, endOffset: end.offset }
    localDays.set(key, day)
  }
  return day
}

const datePartsOf = (date: string) => date.split('-').map(Number) as [number, number, number]

const addDays = (date: string, days: number) => {
  const [y, m, d] = datePartsOf(date)
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10)
}

/** 0 = Sunday .. 6 = Saturday, of a calendar date. */
const weekdayOf = (date: string) => {
  const [y, m, d] = datePartsOf(date)
  return new Date(Date.UTC(y, m - 1, d)).getUTCDay()
}

/** The calendar day `date` in `zone`, as instants. */
export function dayRange(date: string, zone: string): Span {
  const day = localDay(date, zone)
  return [day.start, day.end]
}

/**
 * A wall-clock time ('HH:MM[:SS]', '24:00' allowed) on a local date, as an instant. On a day
 * without a clock change that is plain arithmetic with the day's offset; on the day of a change
 * Luxon places the time (a time the change skips moves forward, as Luxon documents).
 */
function wallClock(date: string, time: string, zone: string): number {
  const [hour, minute, second = 0] = time.split(':').map(Number)
  const day = localDay(date, zone)
  if (hour === 24) return day.end
  if (day.startOffset === day.endOffset) {
    const [y, m, d] = datePartsOf(date)
    return Date.UTC(y, m - 1, d, hour, minute, second) - day.startOffset * 60_000
  }
  return DateTime.fromISO(date, { zone }).set({ hour, minute, second, millisecond: 0 }).toMillis()
}

/** The local calendar date of an instant: the UTC date or a neighbour, found among the kept days. */
function localDateOf(instant: number, zone: string): string {
  const utcDate = new Date(instant).toISOString().slice(0, 10)
  for (const date of [utcDate, addDays(utcDate, -1), addDays(utcDate, 1)]) {
    const day = localDay(date, zone)
    if (day.start <= instant && instant < day.end) return date
  }
  return DateTime.fromMillis(instant, { zone }).toISODate()!
}

const localDatesCovering = ([from, to]: Span, zone: string) => {
  const last = localDateOf(to, zone)
  const dates: string[] = []
  for (let date = addDays(localDateOf(from, zone), -1); date <= last; date = addDays(date, 1)) dates.push(date)
  return dates
}

function subtract(spans: Span[], [from, to]: Span): Span[] {
  const result: Span[] = []
  for (const [a, b] of spans) {
    if (to <= a || from >= b) result.push([a, b])
    else {
      if (a < from) result.push([a, from])
      if (to < b) result.push([to, b])
    }
  }
  return result
}

/** A resource's windows over the local dates that touch `range`, exceptions applied. */
export function resourceWindows(resource: SlotResource, range: Span, weekly: WeeklyWindow[], exceptions: ResourceException[]): Window[] {
  const zone = resource.timezone
  const windows: Window[] = []
  for (const date of localDatesCovering(range, zone)) {
    const onDate = exceptions.filter((e) => e.resource_id === resource.id && e.date === date)
    const special = onDate.filter((e) => e.type === 'special_hours')
    const weekday = weekdayOf(date)
    const base = special.length
      ? special.map((e) => [e.start_time!, e.end_time!] as const)
      : weekly.filter((w) => w.resource_id === resource.id && w.day_of_week === weekday).map((w) => [w.start_time, w.end_time] as const)
    const blocked: Span[] = onDate
      .filter((e) => e.type === 'blocked')
      .map((e) => (e.start_time && e.end_time
        ? [wallClock(date, e.start_time, zone), wallClock(date, e.end_time, zone)]
        : [wallClock(date, '00:00', zone), wallClock(date, '24:00', zone)]))
    for (const [from, to] of base) {
      const start = wallClock(date, from, zone)
      const end = wallClock(date, to, zone)
      if (end <= start) continue
      windows.push({ start, end, open: blocked.reduce(subtract, [[start, end]] as Span[]) })
    }
  }
  return windows.sort((a, b) => a.start - b.start)
}

/** Spans with touching or overlapping ones joined (09-13 + 13-17 = 09-17). */
function joined(spans: Span[]): Span[] {
  const pieces = [...spans].sort((a, b) => a[0] - b[0])
  const merged: Span[] = []
  for (const [a, b] of pieces) {
    const last = merged[merged.length - 1]
    if (last && a <= last[1]) last[1] = Math.max(last[1], b)
    else merged.push([a, b])
  }
  return merged
}

/** The bookable time of a resource: the open pieces of all its windows, joined. */
const openTime = (windows: Window[]): Span[] => joined(windows.flatMap((w) => w.open))

const inside = (open: Span[], start: number, end: number) => open.some(([a, b]) => a <= start && end <= b)

/** Units of a resource not held over [from, to), lowest first. */
function freeUnitsOf(resource: SlotResource, allocations: Allocation[], from: number, to: number): number[] {
  const held = new Set<number>()
  for (const a of allocations) if (a.resource_id === resource.id && a.start < to && a.end > from) held.add(a.unit)
  const free: number[] = []
  for (let unit = 0; unit < resource.capacity; unit++) if (!held.has(unit)) free.push(unit)
  return free
}

/** The instants a booking on `date` may start within: after min notice, before max advance. */
export function bookableRange(service: SlotService, date: string, now: number): Span {
  const [dayStart, dayEnd] = dayRange(date, service.timezone)
  const earliest = Math.max(dayStart, now + service.min_notice_minutes * MINUTE)
  const latest = Math.min(dayEnd, now + service.max_advance_days * DAY + 1)
  return [earliest, latest]
}

/** The slots of a service on a date, in order. */
export function computeSlots(input: SlotInput): Slot[] {
  const { service, needs, date, now, partySize } = input
  const [earliest, latest] = bookableRange(service, date, now)
  if (earliest >= latest || needs.length === 0) return []
  const duration = service.duration_minutes * MINUTE
  const interval = service.slot_interval_minutes * MINUTE
  const before = service.buffer_before_minutes * MINUTE
  const after = service.buffer_after_minutes * MINUTE

  const windowsOf = new Map<number, Window[]>()
  const openOf = new Map<number, Span[]>()
  for (const need of needs) {
    const windows = resourceWindows(need.resource, [earliest, latest], input.weekly, input.exceptions)
    windowsOf.set(need.resource.id, windows)
    openOf.set(need.resource.id, openTime(windows))
  }
  const required = needs.filter((n) => n.required)
  const alternatives = needs.filter((n) => !n.required)
  const grid = alternatives.length ? alternatives : required

  const starts = new Set<number>()
  for (const need of grid) {
    // Touching windows make one stretch, so 09-13 + 13-17 steps like 09-17.
    for (const [from, to] of joined(windowsOf.get(need.resource.id)!.map((w) => [w.start, w.end] as Span))) {
      for (let start = from; start + duration <= to; start += interval) {
        if (start >= earliest && start < latest) starts.add(start)
      }
    }
  }

  const slots: Slot[] = []
  for (const start of [...starts].sort((a, b) => a - b)) {
    const end = start + duration
    const freeUnits = new Map<number, number[]>()
    const fits = (need: SlotNeed) => {
      if (!inside(openOf.get(need.resource.id)!, start, end)) return false
      const free = freeUnitsOf(need.resource, input.allocations, start - before, end + after)
      if (free.length < need.quantity * partySize) return false
      freeUnits.set(need.resource.id, free)
      return true
    }
    if (!required.every(fits)) continue
    const freeAlternatives = alternatives.filter(fits)
    if (alternatives.length && freeAlternatives.length === 0) continue
    slots.push({
      start,
      end,
      resource_ids: (alternatives.length ? freeAlternatives : required).map((n) => n.resource.id),
      freeUnits
    })
  }
  return slots
}

/** The buffered range a booking at `start` holds, epoch milliseconds. */
export function heldRange(service: SlotService, start: number): Span {
  return [
    start - service.buffer_before_minutes * MINUTE,
    start + (service.duration_minutes + service.buffer_after_minutes) * MINUTE
  ]
}

/** The calendar date (service time zone) an instant falls on. */
export const serviceDateOf = (service: SlotService, instant: number) => localDateOf(instant, service.timezone)
