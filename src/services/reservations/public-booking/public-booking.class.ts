import crypto from 'node:crypto'
import { BadRequest, NotFound } from '@feathersjs/errors'
import type { Id, Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import type { PendingEvent } from '../../../hooks/deferred-events.js'
import { slotsOf } from '../reservation-available-slots/reservation-available-slots.class.js'
import { checkedE164 } from '../../../lib/phone-numbers.js'
import type { ReservationQuery } from '../reservations/reservations.class.js'
import type { PublicBookingData, PublicBookingPage, PublicCancelData, PublicReservation, PublicSlotsQuery } from './public-booking.schema.js'
import { organizationOfToken, rememberToken } from '../../../lib/public-tokens.js'

export type { PublicBookingData, PublicBookingPage, PublicCancelData, PublicReservation, PublicSlotsQuery }

type RouteParams<Q = any> = Params<Q> & { route?: Record<string, string> }

const hashToken = (token: string) => crypto.createHash('sha256').update(token).digest('hex')

/** The live, active link of a slug, or 404: inactive and deleted links do not exist publicly. */
async function activeLink(app: Application, slug: string | undefined) {
  const link = slug
    ? await app.get('knex')('reservation_booking_links')
      .whereRaw('lower(slug) = lower(?)', [slug]).where('is_active', true).whereNull('deleted_at').first()
    : undefined
  if (!link) throw new NotFound(`No booking page '${slug}'`)
  return link as { id: number; organization_id: number; name: string; service_ids: number[]; page_config: Record<string, unknown> }
}

function offeredService(link: { service_ids: number[] }, serviceId: number) {
  if (!link.service_ids.includes(serviceId)) {
    throw new BadRequest('Validation failed', { errors: { service_id: 'is not offered on this booking page' } })
  }
}

/** What the person who booked may see of a reservation. */
export const publicView = (row: Record<string, any>): PublicReservation => ({
  id: row.id,
  service_id: row.service_id,
  start_datetime: new Date(row.start_datetime).toISOString(),
  end_datetime: new Date(row.end_datetime).toISOString(),
  party_size: row.party_size,
  status: row.status,
  notes: row.notes ?? null,
  custom_fields_by_key: row.custom_fields_by_key ?? {},
  cancelled_at: row.cancelled_at ? new Date(row.cancelled_at).toISOString() : null,
  cancelled_by: row.cancelled_by ?? null
})

/** GET /public/booking-links/:slug — the page: name, page_config and the active services offered. */
export class PublicBookingPageService {
  constructor(private app: Application) {}

  async get(slug: Id): Promise<PublicBookingPage> {
    const link = await activeLink(this.app, String(slug))
    const db = this.app.get('knex')
    const services = await db('reservation_services as s')
      .join('organizations as o', 'o.id', 's.organization_id')
      .select('s.id', 's.name', 's.description', 's.duration_minutes', 's.max_party_size', 's.price', 's.currency', 's.image_url',
        db.raw('coalesce(s.timezone, o.timezone) as timezone'))
      .where('s.organization_id', link.organization_id)
      .whereIn('s.id', link.service_ids)
      .where('s.is_active', true)
      .whereNull('s.deleted_at')
    services.sort((a: any, b: any) => link.service_ids.indexOf(a.id) - link.service_ids.indexOf(b.id))
    return { name: link.name, page_config: link.page_config as PublicBookingPage['page_config'], services }
  }
}

/** GET /public/booking-links/:slug/slots?service_id&date[&party_size] */
export class PublicSlotsService {
  constructor(private app: Application) {}

  async find(params: RouteParams<PublicSlotsQuery>) {
    const link = await activeLink(this.app, params.route?.slug)
    const query = params.query!
    offeredService(link, query.service_id)
    const slots = await slotsOf(this.app.get('knex'), link.organization_id, query, Date.now())
    return { ...slots, data: slots.data.map(({ start_datetime, end_datetime }) => ({ start_datetime, end_datetime })) }
  }
}

/** POST /public/booking-links/:slug/reservations — books with source 'booking_link' and hands out a manage token. */
export class PublicBookingService {
  constructor(private app: Application) {}

  /**
   * The contact and the reservation are written in one transaction: a booking that fails (409
   * the time is taken, 400 a bad custom field) leaves no new contact behind.
   */
  async create(data: PublicBookingData, params: RouteParams) {
    const link = await activeLink(this.app, params.route?.slug)
    offeredService(link, data.service_id)
    const phoneE164 = checkedE164(data.contact, 'contact.phone')
    const manageToken = crypto.randomBytes(24).toString('base64url')
    // The reservation's and a new contact's events are sent once the booking commits.
    const reservation = await inTransaction(this.app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
      await rememberToken(trx, hashToken(manageToken), link.organization_id)
      const { id: contactId, created: row } = await contactFor(trx, link.organization_id, data.contact, phoneE164)
      const [created] = row ? await this.app.service('contacts').rendered([row], { transaction: { trx } }) : []
      if (created) pendingEvents.push({ service: this.app.service('contacts') as unknown as PendingEvent['service'], event: 'created', data: created })
      return this.app.service('reservations').create(
        {
          organization_id: link.organization_id,
          service_id: data.service_id,
          contact_id: contactId,
          start_datetime: data.start_datetime,
          party_size: data.party_size,
          notes: data.notes,
          custom_fields_by_key: data.custom_fields_by_key
        },
        {
          system: true, transaction: { trx, starting: false }, pendingEvents, reservationSource: 'booking_link', bookingLinkId: link.id, manageTokenHash: hashToken(manageToken),
          // A new visitor's contact is a contacts.created event like any other (webhooks).
          alsoChanged: created ? [{ path: 'contacts', method: 'create', record: created }] : []
        }
      )
    })
    return { reservation: publicView(reservation), manage_token: manageToken }
  }
}

/**
 * The organization's contact with this e-mail (any case), or a new one, inside the booking's
 * transaction. A transaction-scoped advisory lock on (organization, e-mail) makes two
 * simultaneous first bookings create one contact.
 */
async function contactFor(
  trx: Knex.Transaction, organizationId: number, contact: PublicBookingData['contact'], phoneE164: string | null
): Promise<{ id: number; created?: Record<string, any> }> {
  const email = contact.email.trim()
  await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(lower(?)))', [organizationId, email])
  const existing = await trx('contacts').select('id')
    .where('organization_id', organizationId).whereRaw('lower(email) = lower(?)', [email]).whereNull('deleted_at')
    .orderBy('id').first()
  if (existing) return { id: existing.id as number }
  const [row] = await trx('contacts').insert({
    organization_id: organizationId,
    first_name: contact.first_name,
    last_name: contact.last_name ?? null,
    email,
    phone: contact.phone ?? null,
    phone_country_code: contact.phone_country_code ?? null,
    phone_country_iso: contact.phone_country_iso?.toUpperCase() ?? null,
    phone_e164: phoneE164
  }).returning('*')
  return { id: row.id as number, created: row }
}

/** POST /public/reservations/:token/cancel — the person who booked cancels (cancelled_by 'contact'). */
export class PublicCancelService {
  constructor(private app: Application) {}

  async create(data: PublicCancelData, params: RouteParams) {
    const tokenHash = hashToken(params.route?.token ?? '')
    const knex = this.app.get('knex')
    const organizationId = await organizationOfToken(knex, tokenHash)
    const row = organizationId === undefined ? undefined : await knex('reservations').select('id', 'organization_id')
      .where({ organization_id: organizationId, manage_token_hash: tokenHash }).whereNull('deleted_at').first()
    if (!row) throw new NotFound('No reservation for this link')
    const reservation = await this.app.service('reservations').patch(
      row.id,
      { status: 'cancelled', cancellation_reason: data.reason ?? null },
      { system: true, cancelledBy: 'contact', query: { organization_id: row.organization_id } as ReservationQuery }
    )
    return publicView(reservation)
  }
}
