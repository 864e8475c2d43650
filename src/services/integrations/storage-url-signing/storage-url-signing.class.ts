import { BadRequest } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import { nanoid } from 'nanoid'
import type { Application } from '../../../declarations.js'
import { mediaTypeList } from '../../../storage/index.js'
import { EXTENSIONS } from '../../../storage/storage.js'
import type { SignedUploadResult, StorageUrlSigningData, UploadType } from './storage-url-signing.schema.js'

export type { SignedUploadResult, StorageUrlSigningData, UploadType }

const IMAGES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif']
const CONVERSATION_EXTRAS = ['application/pdf', 'audio/mpeg', 'audio/ogg', 'audio/mp4']

/** Where each kind of upload goes under the organization's prefix. */
const FOLDERS: Record<UploadType, string> = {
  'product-media': 'product-media',
  'reservation-service-image': 'reservation-services',
  'booking-link-logo': 'booking-links',
  'booking-link-cover': 'booking-links',
  'conversation-file': 'conversations'
}

/**
 * POST /storage-url-signing: a URL a browser can PUT one file to directly (a presigned S3 URL,
 * or an HMAC-signed URL on this service with local storage), and the public URL to store.
 */
export class StorageUrlSigningService {
  constructor(private app: Application) {}

  /** Media types accepted per kind of upload. */
  acceptedTypes(type: UploadType): Set<string> {
    const media = mediaTypeList(this.app.get('mediaTypes'))
    if (type === 'product-media') return media
    if (type === 'conversation-file') return new Set([...media, ...IMAGES, ...CONVERSATION_EXTRAS])
    return new Set(IMAGES)
  }

  async create(data: StorageUrlSigningData, _params?: Params): Promise<SignedUploadResult> {
    const contentType = data.content_type.trim().toLowerCase()
    const accepted = this.acceptedTypes(data.type)
    const errors: Record<string, string> = {}
    if (!accepted.has(contentType) || !EXTENSIONS[contentType]) {
      errors.content_type = `must be one of: ${[...accepted].join(', ')}`
    }
    const maxBytes = this.app.get('uploadMaxBytes')
    if (data.file_size > maxBytes) errors.file_size = `must be at most ${maxBytes} bytes`
    if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })

    const storage = this.app.get('storage')
    const key = `${data.organization_id}/${FOLDERS[data.type]}/${nanoid()}.${EXTENSIONS[contentType]}`
    const expiresAt = new Date(Date.now() + this.app.get('storageUrlTtlS') * 1000)
    const signed = await storage.signUpload({ key, contentType, size: data.file_size, expiresAt })
    return {
      upload_url: signed.url,
      method: 'PUT',
      headers: signed.headers,
      public_url: storage.publicUrl(key),
      storage_key: key,
      expires_at: expiresAt.toISOString()
    }
  }
}
