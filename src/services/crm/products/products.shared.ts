import type { ClientApplication } from '../../../client.js'
import type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch, ProductService } from './products.class.js'

export type { Product, ProductData, ProductPatch, ProductQuery, ProductSearch }
export type ProductClientService = Pick<ProductService, (typeof productMethods)[number]>

export const productPath = 'products'
export const productMethods: Array<keyof ProductService> = ['find', 'get', 'create', 'patch', 'remove', 'upsert', 'batch-update', 'batch-delete', 'search']

export const productClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(productPath, connection.service(productPath), { methods: productMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [productPath]: ProductClientService
  }
}
