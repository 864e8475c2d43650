import { Conflict } from '@feathersjs/errors'
import type { Knex } from 'knex'
import { findSlots, needsFor } from './slot-data.js'
import type { ServiceContext } from './slot-data.js'
import { heldRange, serviceDateOf } from './slots.js'
import type { Slot, SlotNeed } from './slots.js'

const EXCLUSION_VIOLATION = '23P01'

class UnitsTaken extends Error {}

export interface HoldRequest {
  reservationId: number
  start: number
  partySize: number
  preferredResourceId?: number
  now: number
}

/**
 * Holds the units a reservation needs, inside the caller's transaction, and returns the
 * resource it got (the chosen alternative, else the first required resource).
 *
 * The slot computation only proposes: the start must be an offered slot right now, or 409.
 * What makes double booking impossible is the exclusion constraint on reservation_allocations:
 * each unit is inserted in its own savepoint, and a unit that a concurrent transaction holds
 * fails (after that transaction commits) with an exclusion violation, so the next unit is
 * tried; when no unit is left the whole reservation fails with 409.
 */
export async function holdUnits(trx: Knex.Transaction, context: ServiceContext, request: HoldRequest): Promise<number> {
  const { start, partySize, preferredResourceId, now } = request
  const date = serviceDateOf(context.service, start)
  const slots = await findSlots(trx, context, { date, now, partySize, resourceId: preferredResourceId })
  const slot = slots.find((s) => s.start === start)
  if (!slot) {
    if (preferredResourceId !== undefined) {
      const withAny = await findSlots(trx, context, { date, now, partySize })
      if (withAny.some((s) => s.start === start)) {
        throw new Conflict('The chosen resource is not free at this time', { errors: { resource_id: 'is not free at this time' } })
      }
    }
    throw new Conflict('This time is not an available slot of the service', { errors: { start_datetime: 'is not an available slot of this service' } })
  }

  const needs = needsFor(context, preferredResourceId)
  const [from, to] = heldRange(context.service, start)
  const hold = (need: SlotNeed) => takeUnits(trx, context.organizationId, request.reservationId, need, slot, partySize, [from, to])
  const taken = () => new Conflict('Another booking has just taken this time', { errors: { start_datetime: 'has just been taken by another booking' } })

  const required = needs.filter((n) => n.required).sort((a, b) => a.resource.id - b.resource.id)
  for (const need of required) {
    if (!(await hold(need))) throw taken()
  }
  const alternatives = needs.filter((n) => !n.required && slot.resource_ids.includes(n.resource.id))
  for (const need of alternatives) {
    if (await hold(need)) return need.resource.id
  }
  if (needs.some((n) => !n.required)) throw taken()
  return required[0].resource.id
}

/** Takes quantity × party units of one resource (all or none, in a savepoint). */
async function takeUnits(
  trx: Knex.Transaction, organizationId: number, reservationId: number, need: SlotNeed, slot: Slot, partySize: number, [from, to]: [number, number]
): Promise<boolean> {
  const wanted = need.quantity * partySize
  const candidates = slot.freeUnits.get(need.resource.id) ?? []
  try {
    await trx.transaction(async (resourceSavepoint) => {
      let held = 0
      for (const unit of candidates) {
        if (held === wanted) break
        try {
          await resourceSavepoint.transaction(async (unitSavepoint) => {
            await unitSavepoint('reservation_allocations').insert({
              organization_id: organizationId,
              reservation_id: reservationId,
              resource_id: need.resource.id,
              unit,
              during: unitSavepoint.raw('tstzrange(?, ?)', [new Date(from), new Date(to)])
            })
          })
          held++
        } catch (error: any) {
          if (error?.code !== EXCLUSION_VIOLATION) throw error
        }
      }
      if (held < wanted) throw new UnitsTaken()
    })
    return true
  } catch (error) {
    if (error instanceof UnitsTaken) return false
    throw error
  }
}

/** Frees every unit a reservation holds (cancelled, completed, no-show, deleted, or moving). */
export async function releaseUnits(trx: Knex.Transaction, organizationId: number, reservationId: number) {
  await trx('reservation_allocations').where({ organization_id: organizationId, reservation_id: reservationId }).delete()
}
