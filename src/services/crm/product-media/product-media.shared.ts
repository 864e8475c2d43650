import type { ClientApplication } from '../../../client.js'
import type {
  ProductMedia, ProductMediaData, ProductMediaPatch, ProductMediaQuery, ProductMediaReorder, ProductMediaReorderResult,
  ProductMediaReorderService, ProductMediaService
} from './product-media.class.js'

export type { ProductMedia, ProductMediaData, ProductMediaPatch, ProductMediaQuery, ProductMediaReorder, ProductMediaReorderResult }
// Uploads are multipart/form-data (see docs/media.md); the typed client covers the JSON calls.
export type ProductMediaClientService = Pick<ProductMediaService, 'find' | 'get' | 'patch' | 'remove'>
export type ProductMediaReorderClientService = Pick<ProductMediaReorderService, 'create'>

export const productMediaPath = 'product-media'
export const productMediaMethods: Array<keyof ProductMediaService> = ['find', 'get', 'create', 'patch', 'remove']
export const productMediaReorderPath = 'product-media/reorder'
export const productMediaReorderMethods: Array<keyof ProductMediaReorderService> = ['create']

export const productMediaClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(productMediaPath, connection.service(productMediaPath), { methods: ['find', 'get', 'patch', 'remove'] })
  client.use(productMediaReorderPath, connection.service(productMediaReorderPath), { methods: ['create'] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [productMediaPath]: ProductMediaClientService
    [productMediaReorderPath]: ProductMediaReorderClientService
  }
}
