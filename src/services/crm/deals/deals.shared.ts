import type { ClientApplication } from '../../../client.js'
import type { Deal, DealData, DealPatch, DealQuery, DealService } from './deals.class.js'

export type { Deal, DealData, DealPatch, DealQuery }
export type DealClientService = Pick<DealService, (typeof dealMethods)[number]>

export const dealPath = 'deals'
export const dealMethods: Array<keyof DealService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete']

export const dealClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(dealPath, connection.service(dealPath), { methods: dealMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [dealPath]: DealClientService
  }
}
