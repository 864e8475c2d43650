import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { storage } from '../../storage/index.js'
import { StorageUrlSigningService } from './storage-url-signing.class.js'
import { signedUploadSchema, storageUrlSigningDataSchema, storageUrlSigningDataValidator } from './storage-url-signing.schema.js'
import { storageUrlSigningMethods, storageUrlSigningPath } from './storage-url-signing.shared.js'

export * from './storage-url-signing.class.js'
export * from './storage-url-signing.schema.js'

export const storageUrlSigning = (app: Application) => {
  app.configure(storage)
  app.use(storageUrlSigningPath, new StorageUrlSigningService(app), {
    methods: storageUrlSigningMethods,
    events: [],
    docs: {
      description: 'Signed upload URLs for images of reservation services and booking links, product media and conversation files; see docs/media.md.',
      schemas: { data: storageUrlSigningDataSchema, result: signedUploadSchema }
    }
  } as any)
  app.service(storageUrlSigningPath).hooks({
    around: { all: [authenticated] },
    before: { create: [schemaHooks.validateData(storageUrlSigningDataValidator), scopeToTenant()] }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [storageUrlSigningPath]: StorageUrlSigningService
  }
}
