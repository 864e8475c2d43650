import type { ClientApplication } from '../../../client.js'
import type { AvailableSlots, AvailableSlotsQuery, AvailableSlotsService } from './reservation-available-slots.class.js'

export type { AvailableSlots, AvailableSlotsQuery }
export type AvailableSlotsClientService = Pick<AvailableSlotsService, (typeof availableSlotsMethods)[number]>

export const availableSlotsPath = 'reservation-available-slots'
export const availableSlotsMethods: Array<keyof AvailableSlotsService> = ['find']

export const availableSlotsClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(availableSlotsPath, connection.service(availableSlotsPath), { methods: availableSlotsMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [availableSlotsPath]: AvailableSlotsClientService
  }
}
