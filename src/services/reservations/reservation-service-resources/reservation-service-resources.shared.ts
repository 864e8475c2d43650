import type { ClientApplication } from '../../../client.js'
import type {
  ReservationServiceResource, ReservationServiceResourceData, ReservationServiceResourcePatch, ReservationServiceResourceQuery,
  ReservationServiceResourceService
} from './reservation-service-resources.class.js'

export type { ReservationServiceResource, ReservationServiceResourceData, ReservationServiceResourcePatch, ReservationServiceResourceQuery }
export type ReservationServiceResourceClientService = Pick<ReservationServiceResourceService, (typeof reservationServiceResourceMethods)[number]>

export const reservationServiceResourcePath = 'reservation-service-resources'
export const reservationServiceResourceMethods: Array<keyof ReservationServiceResourceService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationServiceResourceClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationServiceResourcePath, connection.service(reservationServiceResourcePath), { methods: reservationServiceResourceMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationServiceResourcePath]: ReservationServiceResourceClientService
  }
}
