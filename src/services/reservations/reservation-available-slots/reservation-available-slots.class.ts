import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { checkPartySize, findSlots, loadServiceContext, needsFor } from '../slot-data.js'
import type { AvailableSlots, AvailableSlotsQuery } from './reservation-available-slots.schema.js'

export type { AvailableSlots, AvailableSlotsQuery }
export type AvailableSlotsParams = Params<AvailableSlotsQuery>

/** The bookable starts of a service on a date (see src/services/reservations/slots.ts for the rules). */
export class AvailableSlotsService {
  constructor(private knex: Knex) {}

  async find(params: AvailableSlotsParams): Promise<AvailableSlots> {
    const query = params.query!
    return slotsOf(this.knex, query.organization_id!, query, Date.now())
  }
}

/** Shared with the public booking page: the answer of GET /reservation-available-slots. */
export async function slotsOf(db: Knex, organizationId: number, query: AvailableSlotsQuery, now: number): Promise<AvailableSlots> {
  const context = await loadServiceContext(db, organizationId, query.service_id)
  const partySize = query.party_size ?? 1
  checkPartySize(context, needsFor(context, query.resource_id), partySize)
  const slots = await findSlots(db, context, { date: query.date, now, partySize, resourceId: query.resource_id })
  return {
    service_id: query.service_id,
    date: query.date,
    timezone: context.service.timezone,
    data: slots.map((slot) => ({
      start_datetime: new Date(slot.start).toISOString(),
      end_datetime: new Date(slot.end).toISOString(),
      resource_ids: slot.resource_ids
    }))
  }
}

export const getOptions = (app: Application) => app.get('knex')
