import type { ClientApplication } from '../../../client.js'
import type { Import, ImportAction, ImportData, ImportPatch, ImportQuery, ImportService } from './imports.class.js'

export type { Import, ImportAction, ImportData, ImportPatch, ImportQuery }
export type ImportClientService = Pick<ImportService, (typeof importMethods)[number]>

export const importPath = 'imports'
export const importMethods = ['find', 'get', 'create', 'patch', 'start', 'cancel'] as const

// Uploads are multipart/form-data (docs/import-export.md); the typed client covers the JSON calls.
export const importClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(importPath, connection.service(importPath), { methods: [...importMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [importPath]: ImportClientService
  }
}
