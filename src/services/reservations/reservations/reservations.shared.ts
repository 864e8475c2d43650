import type { ClientApplication } from '../../../client.js'
import type { Reservation, ReservationData, ReservationPatch, ReservationQuery, ReservationService } from './reservations.class.js'

export type { Reservation, ReservationData, ReservationPatch, ReservationQuery }
export type ReservationClientService = Pick<ReservationService, (typeof reservationMethods)[number]>

export const reservationPath = 'reservations'
export const reservationMethods: Array<keyof ReservationService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationPath, connection.service(reservationPath), { methods: reservationMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationPath]: ReservationClientService
  }
}
