import type { Application, HookContext } from '../../../declarations.js'
import { customMethodId } from '../../../hooks/custom-method-id.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { multipartUpload } from '../../../storage/multipart.js'
import { storage } from '../../../storage/index.js'
import { imports } from './worker.js'
import { ImportService, getOptions } from './imports.class.js'
import {
  importActionSchema, importActionValidator, importDataValidator, importPatchSchema, importPatchValidator, importQuerySchema,
  importQueryValidator, importSchema, importUploadSchema
} from './imports.schema.js'
import { importMethods, importPath } from './imports.shared.js'

export * from './imports.class.js'
export * from './imports.schema.js'

/** GET /imports/:id with Accept: text/csv answers the failed rows (only for the REST request's own call). */
const failuresAsCsv = async (context: HookContext) => {
  if (context.params.csv?.owns(context)) context.params.failuresCsv = true
}

export const importService = (app: Application) => {
  app.configure(storage)
  app.configure(imports)
  tenantResource(app, {
    path: importPath,
    service: new ImportService(getOptions(app), app),
    methods: importMethods,
    description:
      'CSV imports of contacts, companies or deals (docs/import-export.md). POST is multipart/form-data (fields resource, encoding, delimiter, mapping, keys, file; ' +
      `at most IMPORT_MAX_BYTES, ${app.get('importMaxBytes')} bytes): it answers the proposed mapping and a preview, a dry run that writes nothing. ` +
      'PATCH changes the mapping or keys of a previewed import; start runs it in the background (status, counts and a patched event per chunk of 100 rows); cancel stops it. ' +
      'GET /imports/{id} with Accept: text/csv downloads the failed rows with an error column.',
    schemas: { result: importSchema, data: importUploadSchema, patch: importPatchSchema, query: importQuerySchema },
    validators: { query: importQueryValidator, data: importDataValidator, patch: importPatchValidator },
    hidden: ['file_key', 'last_row'],
    rules: { get: [failuresAsCsv] },
    custom: {
      start: {
        data: importActionValidator,
        docs: { byId: true, data: importActionSchema, result: importSchema, description: 'POST /imports/{id}: runs a previewed import in the background (status queued, then running). 409 unless previewed.' }
      },
      cancel: {
        data: importActionValidator,
        docs: { byId: true, data: importActionSchema, result: importSchema, description: 'POST /imports/{id}: stops a previewed, queued or running import before its next chunk; the rows imported stay. 409 once it has ended.' }
      }
    },
    koa: { before: [multipartUpload(app, () => app.get('importMaxBytes')), customMethodId] },
    docs: {
      createContentType: 'multipart/form-data',
      csvRecord: "with Accept: text/csv, the import's failed rows: the file's columns and an error column (field: message; ...), in the file's order"
    }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [importPath]: ImportService
  }
}
