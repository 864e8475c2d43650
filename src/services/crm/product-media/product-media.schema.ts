import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

const Position = Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'display order, ascending' })
const FileName = Type.String({ minLength: 1, maxLength: 200, description: 'the original file name, sanitised' })

export const productMediaSchema = Type.Object(
  {
    id: RecordId,
    product_id: RecordId,
    organization_id: RecordId,
    file_name: FileName,
    file_type: Type.String({ description: 'media type detected from the file content, e.g. image/png' }),
    file_size: Type.Integer({ minimum: 0, description: 'bytes' }),
    file_path: Type.String({ description: 'path of the file at its public URL' }),
    storage_key: Type.String({ description: 'object key in the file storage' }),
    storage_path: Type.String({ description: 'public URL of the stored file' }),
    position: Position,
    product: Type.Optional(Nullable(Type.Object({ id: RecordId, name: Type.String() }))),
    ...softDeleteTimestamps
  },
  { $id: 'ProductMedia', additionalProperties: false }
)
export type ProductMedia = Static<typeof productMediaSchema>

// Internal bookkeeping of the purge never leaves the service.

/** The text fields of the multipart upload (the file itself arrives as params.upload). */
export const productMediaDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    product_id: RecordId,
    position: Type.Optional(Position)
  },
  { $id: 'ProductMediaData', additionalProperties: false }
)
export type ProductMediaData = Static<typeof productMediaDataSchema>
// Multipart fields are text, so they are coerced like a query string ("12" -> 12).
export const productMediaDataValidator = getValidator(productMediaDataSchema, queryValidator)

/** The multipart form as the OpenAPI document shows it: the text fields and the file. */
export const productMediaUploadSchema = Type.Object(
  {
    ...productMediaDataSchema.properties,
    file: Type.String({ format: 'binary', description: 'the image or video; its type is detected from the content' })
  },
  { $id: 'ProductMediaUpload', required: ['product_id', 'file'] }
)

export const productMediaPatchSchema = Type.Object(
  { position: Type.Optional(Position), file_name: Type.Optional(FileName) },
  { $id: 'ProductMediaPatch', additionalProperties: false, minProperties: 1 }
)
export type ProductMediaPatch = Static<typeof productMediaPatchSchema>
export const productMediaPatchValidator = getValidator(productMediaPatchSchema, dataValidator)

export const productMediaQuerySchema = Type.Object(
  {
    ...listQuery(productMediaSchema, ['organization_id', 'product_id', 'file_type', 'position', 'created_at', 'updated_at']).properties
  },
  { $id: 'ProductMediaQuery', additionalProperties: false }
)
export type ProductMediaQuery = Static<typeof productMediaQuerySchema>
export const productMediaQueryValidator = getValidator(productMediaQuerySchema, queryValidator)

export const productMediaReorderSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    product_id: RecordId,
    positions: Type.Array(Type.Object({ id: RecordId, position: Position }, { additionalProperties: false }), {
      minItems: 1,
      maxItems: 1000
    })
  },
  { $id: 'ProductMediaReorder', additionalProperties: false }
)
export type ProductMediaReorder = Static<typeof productMediaReorderSchema>
export const productMediaReorderValidator = getValidator(productMediaReorderSchema, dataValidator)

export const productMediaReorderResultSchema = Type.Object(
  { success: Type.Boolean(), updated: Type.Integer({ minimum: 0 }) },
  { $id: 'ProductMediaReorderResult', additionalProperties: false }
)
export type ProductMediaReorderResult = Static<typeof productMediaReorderResultSchema>
