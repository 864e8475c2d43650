import { BadRequest, NotFound } from '@feathersjs/errors'
import type { Id, NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Relation } from '../../../engine/read-model.js'
import { containsPattern } from '../../../engine/search.js'
import { checkPartySize, loadServiceContext, needsFor } from '../slot-data.js'
import { holdUnits, releaseUnits } from '../hold.js'
import { ACTIVE_STATUSES, FINAL_STATUSES, STATUS_MOVES } from './reservations.schema.js'
import type { Reservation, ReservationData, ReservationPatch, ReservationQuery, ReservationStatus } from './reservations.schema.js'
import { databaseOf } from '../../../db.js'

export type { Reservation, ReservationData, ReservationPatch, ReservationQuery }
export type ReservationParams = KnexAdapterParams<ReservationQuery>

declare module '@feathersjs/feathers' {
  interface Params {
    /** Internal callers (public booking page, assistant tools) say where a reservation comes from. */
    reservationSource?: 'api' | 'booking_link' | 'assistant'
    bookingLinkId?: number
    /** sha256 of the manage token handed to the person who booked through a public link. */
    manageTokenHash?: string
    /** Who cancels: 'organization' through the API (default), 'contact' through the public page. */
    cancelledBy?: 'organization' | 'contact'
  }
}

export const RELATIONS: Relation[] = [
  { from: 'contact_id', as: 'contact', table: 'contacts', columns: ['id', 'first_name', 'last_name', 'email', 'phone'] },
  { from: 'service_id', as: 'service', table: 'reservation_services', columns: ['id', 'name', 'duration_minutes'] },
  { from: 'resource_id', as: 'resource', table: 'reservation_resources', columns: ['id', 'name'] }
]

const COLUMNS = ['organization_id', 'service_id', 'contact_id', 'party_size', 'notes', 'deal_id', 'company_id', 'custom_fields', 'created_by_user_id'] as const

/**
 * Reservations. Every write that touches time runs in one transaction with the units it holds
 * (reservation_allocations, guarded by an exclusion constraint): a create, a reschedule or a
 * status move either happens whole or not at all.
 */
export class ReservationService extends RecordService<Reservation, ReservationData, ReservationParams, ReservationPatch> {
  async find(params: ReservationParams = {}): Promise<any> {
    const { searchTerm, ...query } = (params.query ?? {}) as Record<string, any>
    const scoped = { ...params, query }
    const builder = this.createQuery(scoped)
    if (searchTerm) builder.whereIn('reservations.contact_id', this.contactsMatching(query.organization_id, searchTerm))
    return super._find({ ...scoped, knex: builder })
  }

  /** Contacts of the organization whose name, e-mail or phone contains the term (any case). */
  private contactsMatching(organizationId: number, term: string) {
    const pattern = containsPattern(term)
    return this.knex('contacts')
      .select('id')
      .where('organization_id', organizationId)
      .whereNull('deleted_at')
      .where((q) => q
        .whereRaw("lower(concat_ws(' ', first_name, last_name)) LIKE ?", [pattern])
        .orWhereRaw('lower(email) LIKE ?', [pattern])
        .orWhereRaw('lower(phone) LIKE ?', [pattern]))
  }

  /**
   * Runs in the caller's transaction when params.transaction is given (as a savepoint), so a
   * caller that wrote something the reservation depends on (the public booking's new contact)
   * keeps it only if the reservation is made.
   */
  async _create(data: any, params: ReservationParams = {}): Promise<any> {
    if (Array.isArray(data)) throw new BadRequest('Send one record at a time')
    const db = databaseOf(params, this.knex)
    const context = await loadServiceContext(db, data.organization_id, data.service_id)
    const partySize = data.party_size ?? 1
    const preferred = data.resource_id ?? undefined
    checkPartySize(context, needsFor(context, preferred), partySize)
    const start = Date.parse(data.start_datetime)
    const now = Date.now()
    return db.transaction(async (trx) => {
      const row: Record<string, unknown> = Object.fromEntries(COLUMNS.filter((c) => data[c] !== undefined).map((c) => [c, data[c]]))
      const [created] = await trx('reservations').insert({
        ...row,
        party_size: partySize,
        start_datetime: new Date(start),
        end_datetime: new Date(start + context.service.duration_minutes * 60_000),
        status: context.service.requires_confirmation ? 'pending' : 'confirmed',
        source: params.reservationSource ?? 'api',
        booking_link_id: params.bookingLinkId ?? null,
        manage_token_hash: params.manageTokenHash ?? null
      }).returning('*')
      const resourceId = await holdUnits(trx, context, { reservationId: created.id, start, partySize, preferredResourceId: preferred, now })
      const [reservation] = await this.written(trx, trx('reservations').where({ organization_id: created.organization_id, id: created.id })
        .update({ resource_id: resourceId }).returning('*'))
      return reservation
    })
  }

  /**
   * Status moves, reschedules and plain edits. The row is locked first, so concurrent patches
   * of one reservation apply one after the other; a reschedule releases the reservation's own
   * units and holds new ones in the same transaction (409 leaves everything as it was).
   */
  async _patch(id: NullableId, data: any, params: ReservationParams = {}): Promise<any> {
    if (id === null) throw new BadRequest('Patch one reservation at a time')
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const current = await this.scopedRow(trx, id, params)
      const changes: Record<string, unknown> = { ...data }
      const status = current.status as ReservationStatus
      const next = (data.status ?? status) as ReservationStatus
      if (next !== status && !STATUS_MOVES[status].includes(next)) {
        throw new BadRequest('Invalid status change', {
          errors: { status: STATUS_MOVES[status].length ? `can change from ${status} to ${STATUS_MOVES[status].join(' or ')} only` : `${status} is final` }
        })
      }
      const moving = ['start_datetime', 'resource_id', 'party_size'].some((field) => data[field] !== undefined && !sameValue(field, data[field], current[field]))
      if (moving && !ACTIVE_STATUSES.includes(next)) {
        throw new BadRequest('Only a pending or confirmed reservation can be rescheduled', { errors: { start_datetime: `cannot change on a ${next} reservation` } })
      }
      if (next === 'cancelled' && status !== 'cancelled') {
        changes.cancelled_at = trx.fn.now()
        changes.cancelled_by = params.cancelledBy ?? 'organization'
      }
      if (FINAL_STATUSES.includes(next) && !FINAL_STATUSES.includes(status)) {
        await releaseUnits(trx, current.organization_id, current.id)
      } else if (moving) {
        await this.reschedule(trx, current, data, changes)
      }
      delete changes.organization_id
      const [reservation] = await this.written(trx, trx('reservations').where({ organization_id: current.organization_id, id: current.id })
        .update({ ...changes, updated_at: trx.fn.now() }).returning('*'))
      return reservation
    })
  }

  private async reschedule(trx: Knex.Transaction, current: Record<string, any>, data: any, changes: Record<string, unknown>) {
    const context = await loadServiceContext(trx, current.organization_id, current.service_id)
    const partySize = data.party_size ?? current.party_size
    const preferred = data.resource_id !== undefined ? data.resource_id ?? undefined : current.resource_id ?? undefined
    const start = data.start_datetime !== undefined ? Date.parse(data.start_datetime) : new Date(current.start_datetime).getTime()
    checkPartySize(context, needsFor(context, preferred), partySize)
    await releaseUnits(trx, current.organization_id, current.id)
    const explicit = data.resource_id !== undefined && data.resource_id !== null
    const resourceId = await holdUnits(trx, context, {
      reservationId: current.id, start, partySize, now: Date.now(),
      // Keeping the current resource is a wish, not a condition: any free alternative will do.
      preferredResourceId: explicit ? preferred : undefined
    })
    Object.assign(changes, {
      start_datetime: new Date(start),
      end_datetime: new Date(start + context.service.duration_minutes * 60_000),
      resource_id: resourceId,
      party_size: partySize
    })
  }

  /** Soft delete; the units are released in the same transaction. */
  async _remove(id: NullableId, params: ReservationParams = {}): Promise<any> {
    if (id === null) throw new BadRequest('Delete one reservation at a time')
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const current = await this.scopedRow(trx, id, params)
      await releaseUnits(trx, current.organization_id, current.id)
      return super._remove(id, { ...params, transaction: { trx } } as ReservationParams)
    })
  }

  /** The live reservation the call may see, locked for the rest of the transaction. */
  private async scopedRow(trx: Knex.Transaction, id: Id, params: ReservationParams) {
    const { query } = this.filterQuery(params)
    const builder = trx('reservations').where('reservations.id', id).whereNull('reservations.deleted_at').forUpdate()
    this.knexify(builder, query)
    const row = await builder.first()
    if (!row) throw new NotFound(`No record found for id '${id}'`)
    return row
  }
}

const sameValue = (field: string, value: unknown, stored: unknown) =>
  field === 'start_datetime' ? Date.parse(value as string) === new Date(stored as Date).getTime() : value === stored

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservations'
})
