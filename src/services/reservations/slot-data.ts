import { DateTime } from 'luxon'
import { BadRequest } from '@feathersjs/errors'
import type { Knex } from 'knex'
import { readAll } from '../../db.js'
import { bookableRange, computeSlots } from './slots.js'
import type { Allocation, ResourceException, Slot, SlotNeed, SlotService, WeeklyWindow } from './slots.js'

/** A live service with the effective time zone and what it needs, loaded once per call. */
export interface ServiceContext {
  organizationId: number
  service: SlotService & { name: string; is_active: boolean; requires_confirmation: boolean }
  needs: SlotNeed[]
}

/**
 * Loads a live service of an organization and its live links with their resources (two
 * queries). Time zones fall back to the organization's. A service that is inactive → 400.
 */
export async function loadServiceContext(db: Knex, organizationId: number, serviceId: number): Promise<ServiceContext> {
  const [service, links] = await readAll<[any, any[]]>(db, [
    () => db('reservation_services as s')
      .join('organizations as o', 'o.id', 's.organization_id')
      .select('s.*', db.raw('coalesce(s.timezone, o.timezone) as zone'))
      .where({ 's.organization_id': organizationId, 's.id': serviceId })
      .whereNull('s.deleted_at')
      .first(),
    () => db('reservation_service_resources as l')
      .join('reservation_resources as r', function () {
        this.on('r.organization_id', 'l.organization_id').andOn('r.id', 'l.resource_id')
      })
      .join('organizations as o', 'o.id', 'l.organization_id')
      .select('l.resource_id', 'l.is_required', 'l.quantity', 'r.capacity', 'r.is_active', db.raw('coalesce(r.timezone, o.timezone) as zone'))
      .where({ 'l.organization_id': organizationId, 'l.service_id': serviceId })
      .whereNull('l.deleted_at')
      .whereNull('r.deleted_at')
      .orderBy('l.resource_id')
  ])
  if (!service) throw new BadRequest('Invalid reference', { errors: { service_id: 'must be a reservation service of this organization' } })
  if (!service.is_active) throw new BadRequest('The service is not active', { errors: { service_id: 'is not active' } })
  // An inactive required resource makes the service unbookable; inactive alternatives drop out.
  const blocked = links.some((l: any) => l.is_required && !l.is_active)
  const needs: SlotNeed[] = blocked
    ? []
    : links.filter((l: any) => l.is_active).map((l: any) => ({
        resource: { id: l.resource_id, capacity: l.capacity, timezone: l.zone },
        required: l.is_required,
        quantity: l.quantity
      }))
  return {
    organizationId,
    service: { ...service, timezone: service.zone },
    needs
  }
}

export interface SlotQuery {
  date: string
  now: number
  partySize: number
  /** Narrows the alternatives to this resource (must be linked to the service). */
  resourceId?: number
}

/** The needs of a query: the required links and the alternatives, narrowed to one when asked. */
export function needsFor(context: ServiceContext, resourceId?: number): SlotNeed[] {
  if (resourceId === undefined) return context.needs
  const chosen = context.needs.find((n) => n.resource.id === resourceId)
  if (!chosen) throw new BadRequest('Invalid reference', { errors: { resource_id: 'is not an active resource of this service' } })
  return chosen.required ? context.needs : context.needs.filter((n) => n.required || n === chosen)
}

/** Rejects a party the service or its resources can never take. */
export function checkPartySize(context: ServiceContext, needs: SlotNeed[], partySize: number) {
  const { max_party_size } = context.service
  if (max_party_size !== null && partySize > max_party_size) {
    throw new BadRequest('Validation failed', { errors: { party_size: `must be at most ${max_party_size} for this service` } })
  }
  const fits = (n: SlotNeed) => n.quantity * partySize <= n.resource.capacity
  const alternatives = needs.filter((n) => !n.required)
  if (!needs.filter((n) => n.required).every(fits) || (alternatives.length > 0 && !alternatives.some(fits))) {
    throw new BadRequest('Validation failed', { errors: { party_size: 'is more than the resources of this service can take at once' } })
  }
}

/**
 * The slots of a service on a date: three queries (weekly hours, exceptions, held units of
 * the day), then the pure computation. `db` may be a transaction, whose own writes count.
 */
export async function findSlots(db: Knex, context: ServiceContext, query: SlotQuery): Promise<Slot[]> {
  const needs = needsFor(context, query.resourceId)
  const [earliest, latest] = bookableRange(context.service, query.date, query.now)
  if (earliest >= latest || needs.length === 0) return []
  const organizationId = context.organizationId
  const resourceIds = needs.map((n) => n.resource.id)
  const from = DateTime.fromISO(query.date).minus({ days: 2 }).toISODate()
  const to = DateTime.fromISO(query.date).plus({ days: 2 }).toISODate()
  const { duration_minutes, buffer_before_minutes, buffer_after_minutes } = context.service
  const heldFrom = new Date(earliest - buffer_before_minutes * 60_000)
  const heldTo = new Date(latest + (duration_minutes + buffer_after_minutes) * 60_000)
  const [weekly, exceptions, held] = await readAll<[WeeklyWindow[], ResourceException[], any[]]>(db, [
    () => db('reservation_resource_availability')
      .select('resource_id', 'day_of_week', 'start_time', 'end_time')
      .where('organization_id', organizationId)
      .whereIn('resource_id', resourceIds)
      .whereNull('deleted_at'),
    () => db('reservation_resource_exceptions')
      .select('resource_id', db.raw('to_char(date, \'YYYY-MM-DD\') as date'), 'type', 'start_time', 'end_time')
      .where('organization_id', organizationId)
      .whereIn('resource_id', resourceIds)
      .whereBetween('date', [from, to])
      .whereNull('deleted_at'),
    () => db('reservation_allocations')
      .select('resource_id', 'unit', 'reservation_id', db.raw('lower(during) as start'), db.raw('upper(during) as "end"'))
      .where('organization_id', organizationId)
      .whereIn('resource_id', resourceIds)
      .whereRaw('during && tstzrange(?, ?)', [heldFrom, heldTo])
  ])
  const allocations: Allocation[] = held.map((a: any) => ({
    resource_id: a.resource_id, unit: a.unit, reservation_id: a.reservation_id,
    start: new Date(a.start).getTime(), end: new Date(a.end).getTime()
  }))
  return computeSlots({ service: context.service, needs, date: query.date, now: query.now, partySize: query.partySize, weekly, exceptions, allocations })
}
