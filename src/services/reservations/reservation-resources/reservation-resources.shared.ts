import type { ClientApplication } from '../../../client.js'
import type { ReservationResource, ReservationResourceData, ReservationResourcePatch, ReservationResourceQuery, ReservationResourceService } from './reservation-resources.class.js'

export type { ReservationResource, ReservationResourceData, ReservationResourcePatch, ReservationResourceQuery }
export type ReservationResourceClientService = Pick<ReservationResourceService, (typeof reservationResourceMethods)[number]>

export const reservationResourcePath = 'reservation-resources'
export const reservationResourceMethods: Array<keyof ReservationResourceService> = ['find', 'get', 'create', 'patch', 'remove']

export const reservationResourceClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(reservationResourcePath, connection.service(reservationResourcePath), { methods: reservationResourceMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [reservationResourcePath]: ReservationResourceClientService
  }
}
