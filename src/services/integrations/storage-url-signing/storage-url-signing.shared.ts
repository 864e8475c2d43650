import type { ClientApplication } from '../../../client.js'
import type { SignedUploadResult, StorageUrlSigningData, StorageUrlSigningService } from './storage-url-signing.class.js'

export type { SignedUploadResult, StorageUrlSigningData }
export type StorageUrlSigningClientService = Pick<StorageUrlSigningService, 'create'>

export const storageUrlSigningPath = 'storage-url-signing'
export const storageUrlSigningMethods: Array<keyof StorageUrlSigningService> = ['create']

export const storageUrlSigningClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(storageUrlSigningPath, connection.service(storageUrlSigningPath), { methods: ['create'] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [storageUrlSigningPath]: StorageUrlSigningClientService
  }
}
