import type { ClientApplication } from '../../../client.js'
import type { ReservationService, ReservationServiceData, ReservationServicePatch, ReservationServiceQuery, ReservationServiceService } from './reservation-services.class.js'

export type { ReservationService, ReservationServiceData, ReservationServicePatch, ReservationServiceQuery }
export type ReservationServiceClientService = Pick<ReservationServiceService, (typeof reservationServiceMethods)[number]>

export const reservationServicePath = 'reservation-services'
export const reservationServiceMethods: Array<keyof ReservationServiceService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationServiceClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationServicePath, connection.service(reservationServicePath), { methods: reservationServiceMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationServicePath]: ReservationServiceClientService
  }
}
