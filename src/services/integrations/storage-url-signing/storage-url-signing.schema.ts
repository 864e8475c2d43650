import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, getValidator } from '../../../validators.js'
import { RecordId, Timestamp } from '../../../schemas.js'

export const UPLOAD_TYPES = [
  'product-media',
  'reservation-service-image',
  'booking-link-logo',
  'booking-link-cover',
  'conversation-file'
] as const
export type UploadType = (typeof UPLOAD_TYPES)[number]

export const storageUrlSigningDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    type: Type.Union(UPLOAD_TYPES.map((type) => Type.Literal(type))),
    file_name: Type.String({ minLength: 1, maxLength: 200 }),
    content_type: Type.String({ minLength: 3, maxLength: 100 }),
    file_size: Type.Integer({ minimum: 1, description: 'bytes; at most UPLOAD_MAX_BYTES' })
  },
  { $id: 'StorageUrlSigningData', additionalProperties: false }
)
export type StorageUrlSigningData = Static<typeof storageUrlSigningDataSchema>
export const storageUrlSigningDataValidator = getValidator(storageUrlSigningDataSchema, dataValidator)

export const signedUploadSchema = Type.Object(
  {
    upload_url: Type.String({ description: 'PUT the file here, with the headers below, before expires_at' }),
    method: Type.Literal('PUT'),
    headers: Type.Record(Type.String(), Type.String()),
    public_url: Type.String({ description: 'where the file is read once uploaded; store this on the record' }),
    storage_key: Type.String(),
    expires_at: Timestamp
  },
  { $id: 'SignedUpload', additionalProperties: false }
)
export type SignedUploadResult = Static<typeof signedUploadSchema>
