import type { Application } from '../../declarations.js'
import { tenantResource } from '../tenant-resource.js'
import { ApiKeyService, getOptions } from './api-keys.class.js'
import {
  apiKeyDataSchema, apiKeyDataValidator, apiKeyExternalResolver, apiKeyPatchSchema, apiKeyPatchValidator,
  apiKeyQuerySchema, apiKeyQueryValidator, apiKeySchema
} from './api-keys.schema.js'
import { apiKeyMethods, apiKeyPath } from './api-keys.shared.js'

export * from './api-keys.class.js'
export * from './api-keys.schema.js'

export const apiKey = (app: Application) =>
  tenantResource(app, {
    path: apiKeyPath,
    service: new ApiKeyService(getOptions(app)),
    methods: apiKeyMethods,
    description: 'API keys of an organization (owner or admin). The plain key is returned once, by create; DELETE revokes.',
    schemas: { result: apiKeySchema, data: apiKeyDataSchema, patch: apiKeyPatchSchema, query: apiKeyQuerySchema },
    validators: { query: apiKeyQueryValidator, data: apiKeyDataValidator, patch: apiKeyPatchValidator },
    resolvers: { external: apiKeyExternalResolver },
    roles: { all: ['owner', 'admin'] },
    // A key never manages keys: that would let it outlive its own revocation.
    refuseApiKeys: true
  })

declare module '../../declarations.js' {
  interface ServiceTypes {
    [apiKeyPath]: ApiKeyService
  }
}
