import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { storage } from '../../storage/index.js'
import { ProductMediaReorderService, ProductMediaService, getOptions, sanitizeFileName } from './product-media.class.js'
import {
  productMediaDataValidator, productMediaExternalResolver, productMediaPatchSchema,
  productMediaPatchValidator, productMediaQuerySchema, productMediaQueryValidator, productMediaReorderResultSchema,
  productMediaReorderSchema, productMediaReorderValidator, productMediaSchema, productMediaUploadSchema
} from './product-media.schema.js'
import { productMediaMethods, productMediaPath, productMediaReorderMethods, productMediaReorderPath } from './product-media.shared.js'
import { multipartUpload } from './multipart.js'

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
  app.use(productMediaPath, new ProductMediaService(getOptions(app), app), {
    methods: productMediaMethods,
    events: [],
    koa: { before: [multipartUpload(app, () => app.get('uploadMaxBytes')) as any] },
    docs: {
      description: 'Images and videos of a product. POST is multipart/form-data (fields organization_id, product_id, position, file); see docs/media.md.',
      createContentType: 'multipart/form-data',
      schemas: { result: productMediaSchema, data: productMediaUploadSchema, patch: productMediaPatchSchema, query: productMediaQuerySchema }
    }
  } as any)
  app.service(productMediaPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveExternal(productMediaExternalResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(productMediaQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(productMediaDataValidator), liveProduct],
      patch: [schemaHooks.validateData(productMediaPatchValidator), sanitizePatchedName]
    }
  })

  app.use(productMediaReorderPath, new ProductMediaReorderService(app.get('knex')), {
    methods: productMediaReorderMethods,
    events: [],
    docs: {
      description: 'New positions for several media items of one product, in one transaction: any id that is not a live item of the product → 400 and nothing changes.',
      schemas: { data: productMediaReorderSchema, result: productMediaReorderResultSchema }
    }
  } as any)
  app.service(productMediaReorderPath).hooks({
    around: { all: [authenticated] },
    before: { create: [schemaHooks.validateData(productMediaReorderValidator), scopeToTenant(), liveProduct] },
    after: { create: [answerOk] }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [productMediaPath]: ProductMediaService
    [productMediaReorderPath]: ProductMediaReorderService
  }
}
