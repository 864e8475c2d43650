import type { ClientApplication } from '../../../client.js'
import type { BookingLink, BookingLinkData, BookingLinkPatch, BookingLinkQuery, BookingLinkService } from './reservation-booking-links.class.js'

export type { BookingLink, BookingLinkData, BookingLinkPatch, BookingLinkQuery }
export type BookingLinkClientService = Pick<BookingLinkService, (typeof bookingLinkMethods)[number]>

export const bookingLinkPath = 'reservation-booking-links'
export const bookingLinkMethods: Array<keyof BookingLinkService> = ['find', 'get', 'create', 'patch', 'remove']

export const bookingLinkClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(bookingLinkPath, connection.service(bookingLinkPath), { methods: bookingLinkMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [bookingLinkPath]: BookingLinkClientService
  }
}
