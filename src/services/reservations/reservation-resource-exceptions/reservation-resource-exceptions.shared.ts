import type { ClientApplication } from '../../../client.js'
import type {
  ReservationException, ReservationExceptionData, ReservationExceptionPatch, ReservationExceptionQuery, ReservationExceptionService
} from './reservation-resource-exceptions.class.js'

export type { ReservationException, ReservationExceptionData, ReservationExceptionPatch, ReservationExceptionQuery }
export type ReservationExceptionClientService = Pick<ReservationExceptionService, (typeof reservationExceptionMethods)[number]>

export const reservationExceptionPath = 'reservation-resource-exceptions'
export const reservationExceptionMethods: Array<keyof ReservationExceptionService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationExceptionClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationExceptionPath, connection.service(reservationExceptionPath), { methods: reservationExceptionMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationExceptionPath]: ReservationExceptionClientService
  }
}
