import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { BookingLink, BookingLinkData, BookingLinkPatch, BookingLinkQuery } from './reservation-booking-links.schema.js'

export type { BookingLink, BookingLinkData, BookingLinkPatch, BookingLinkQuery }
export type BookingLinkParams = KnexAdapterParams<BookingLinkQuery>

/** Public booking pages: which services a slug offers and how the page looks. */
export class BookingLinkService extends RecordService<BookingLink, BookingLinkData, BookingLinkParams, BookingLinkPatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_booking_links'
})
