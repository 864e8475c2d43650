import type { ClientApplication } from '../../../client.js'
import type { DealProduct, DealProductData, DealProductPatch, DealProductQuery, DealProductService } from './deal-products.class.js'

export type { DealProduct, DealProductData, DealProductPatch, DealProductQuery }
export type DealProductClientService = Pick<DealProductService, (typeof dealProductMethods)[number]>

export const dealProductPath = 'deal-products'
export const dealProductMethods: Array<keyof DealProductService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete']

export const dealProductClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(dealProductPath, connection.service(dealProductPath), { methods: dealProductMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [dealProductPath]: DealProductClientService
  }
}
