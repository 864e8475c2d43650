import type { Application } from '../../../declarations.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { storage } from '../../../storage/index.js'
import { StorageUrlSigningService } from './storage-url-signing.class.js'
import { signedUploadSchema, storageUrlSigningDataSchema, storageUrlSigningDataValidator } from './storage-url-signing.schema.js'
import { storageUrlSigningMethods, storageUrlSigningPath } from './storage-url-signing.shared.js'

export * from './storage-url-signing.class.js'
export * from './storage-url-signing.schema.js'

export const storageUrlSigning = (app: Application) => {
  app.configure(storage)
  tenantOperation(app, {
    path: storageUrlSigningPath,
    summary: 'Get a signed URL to upload a file straight to storage',
    service: new StorageUrlSigningService(app),
    methods: storageUrlSigningMethods,
    description: 'Signed upload URLs for images of reservation services and booking links, product media and conversation files; see docs/media.md.',
    schemas: { data: storageUrlSigningDataSchema, result: signedUploadSchema },
    validators: { data: storageUrlSigningDataValidator }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [storageUrlSigningPath]: StorageUrlSigningService
  }
}
