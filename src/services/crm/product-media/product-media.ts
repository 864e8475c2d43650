import type { Application, HookContext } from '../../../declarations.js'
import { verifyReferences } from '../../../hooks/references.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import type { RecordService } from '../../../engine/record-service.js'
import { announceChanges } from '../../../hooks/deferred-events.js'
import { storage } from '../../../storage/index.js'
import { runInBackground } from '../../../background.js'
import { PRODUCT, ProductMediaReorderService, ProductMediaService, getOptions, sanitizeFileName } from './product-media.class.js'
import {
  productMediaDataValidator, productMediaPatchSchema,
  productMediaPatchValidator, productMediaQuerySchema, productMediaQueryValidator, productMediaReorderResultSchema,
  productMediaReorderSchema, productMediaReorderValidator, productMediaSchema, productMediaUploadSchema
} from './product-media.schema.js'
import { productMediaMethods, productMediaPath, productMediaReorderMethods, productMediaReorderPath } from './product-media.shared.js'
import { multipartUpload } from '../../../storage/multipart.js'

export * from './product-media.class.js'
export * from './product-media.schema.js'

const liveProduct = verifyReferences({ product_id: { table: 'products' } })

const sanitizePatchedName = async (context: HookContext) => {
  const data = context.data as { file_name?: string }
  if (data.file_name !== undefined) data.file_name = sanitizeFileName(data.file_name)
}

// A reorder is an update of existing items, not a creation.
const answerOk = async (context: HookContext) => {
  context.http = { ...context.http, status: 200 }
}

export const productMedia = (app: Application) => {
  app.configure(storage)
  tenantResource(app, {
    path: productMediaPath,
    service: new ProductMediaService(getOptions(app), app),
    methods: productMediaMethods,
    description: 'Images and videos of a product. POST is multipart/form-data (fields organization_id, product_id, position, file); see docs/media.md.',
    schemas: { result: productMediaSchema, data: productMediaUploadSchema, patch: productMediaPatchSchema, query: productMediaQuerySchema },
    validators: { query: productMediaQueryValidator, data: productMediaDataValidator, patch: productMediaPatchValidator },
    hidden: ['purged_at'],
    references: { product_id: { table: 'products' } },
    joins: { record: [PRODUCT] },
    rules: { patch: [sanitizePatchedName] },
    koa: { before: [multipartUpload(app, () => app.get('uploadMaxBytes'))] },
    docs: { createContentType: 'multipart/form-data', noun: { one: 'product media item' } }
  })
  purgeDeletedMedia(app)

  tenantOperation(app, {
    path: productMediaReorderPath,
    summary: 'Reorder the media of a product',
    service: new ProductMediaReorderService(app.get('knex'), app.service(productMediaPath) as unknown as RecordService),
    methods: productMediaReorderMethods,
    description: 'New positions for several media items of one product, in one transaction: any id that is not a live item of the product → 400 and nothing changes.',
    schemas: { data: productMediaReorderSchema, result: productMediaReorderResultSchema },
    validators: { data: productMediaReorderValidator },
    rules: { create: [liveProduct] },
    after: { create: [answerOk, announceChanges(productMediaPath, 'patched')] }
  })
}

/** Removes the files of deleted items in the background (MEDIA_PURGE_INTERVAL_S; 0 turns it off). */
function purgeDeletedMedia(app: Application) {
  const intervalS = app.get('mediaPurgeIntervalS')
  if (!intervalS) return
  runInBackground(app, {
    name: 'media purge',
    intervalMs: intervalS * 1000,
    pass: () => app.service(productMediaPath).purgeDeleted()
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [productMediaPath]: ProductMediaService
    [productMediaReorderPath]: ProductMediaReorderService
  }
}
