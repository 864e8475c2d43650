import type { ClientApplication } from '../../../client.js'
import type {
  ReservationAvailability, ReservationAvailabilityData, ReservationAvailabilityPatch, ReservationAvailabilityQuery, ReservationAvailabilityService
} from './reservation-resource-availability.class.js'

export type { ReservationAvailability, ReservationAvailabilityData, ReservationAvailabilityPatch, ReservationAvailabilityQuery }
export type ReservationAvailabilityClientService = Pick<ReservationAvailabilityService, (typeof reservationAvailabilityMethods)[number]>

export const reservationAvailabilityPath = 'reservation-resource-availability'
export const reservationAvailabilityMethods: Array<keyof ReservationAvailabilityService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationAvailabilityClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationAvailabilityPath, connection.service(reservationAvailabilityPath), { methods: reservationAvailabilityMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationAvailabilityPath]: ReservationAvailabilityClientService
  }
}
