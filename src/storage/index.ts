import crypto from 'node:crypto'
import path from 'node:path'
import type { Application } from '../declarations.js'
import { LocalStorage } from './local.js'
import { S3Storage } from './s3.js'
import type { Storage } from './storage.js'

export type { Storage, SignedUpload, UploadGrant } from './storage.js'
export { LocalStorage, LOCAL_ROUTE } from './local.js'
export { S3Storage } from './s3.js'

declare module '../declarations.js' {
  interface Configuration {
    storage: Storage
  }
}

/** The key signing local upload URLs, derived from the authentication secret so it needs no setting of its own. */
export const signingSecret = (app: Application) =>
  crypto.createHmac('sha256', app.get('authentication')!.secret).update('crm storage url signing v1').digest()

/**
 * The application's file storage, created once: S3 when s3.bucket is configured, local disk
 * under DATA_DIR/media otherwise (with its /media routes mounted on the app).
 */
export const storage = (app: Application) => {
  if (app.get('storage')) return
  const s3 = app.get('s3')
  if (s3?.bucket) {
    app.set('storage', new S3Storage(s3))
    return
  }
  const local = new LocalStorage(path.resolve(app.get('dataDir'), 'media'), app.get('publicUrl'), signingSecret(app))
  app.set('storage', local)
  app.use(local.routes() as any)
}

/** Media types from a comma-separated setting. */
export const mediaTypeList = (value: string) =>
  new Set(value.split(',').map((type) => type.trim().toLowerCase()).filter(Boolean))
