import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { refuseApiKeyCallers } from '../../hooks/api-key-callers.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { ApiKeyService, getOptions } from './api-keys.class.js'
import {
  apiKeyDataSchema, apiKeyDataValidator, apiKeyExternalResolver, apiKeyPatchSchema, apiKeyPatchValidator,
  apiKeyQuerySchema, apiKeyQueryValidator, apiKeyResolver, apiKeySchema
} from './api-keys.schema.js'
import { apiKeyMethods, apiKeyPath } from './api-keys.shared.js'

export * from './api-keys.class.js'
export * from './api-keys.schema.js'

export const apiKey = (app: Application) => {
  app.use(apiKeyPath, new ApiKeyService(getOptions(app)), {
    methods: apiKeyMethods,
    events: [],
    docs: {
      description: 'API keys of an organization (owner or admin). The plain key is returned once, by create; DELETE revokes.',
      schemas: { result: apiKeySchema, data: apiKeyDataSchema, patch: apiKeyPatchSchema, query: apiKeyQuerySchema }
    }
  } as any)
  app.service(apiKeyPath).hooks({
    around: {
      all: [authenticated, refuseApiKeyCallers, schemaHooks.resolveExternal(apiKeyExternalResolver), schemaHooks.resolveResult(apiKeyResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(apiKeyQueryValidator), scopeToTenant({ roles: { all: ['owner', 'admin'] } })],
      create: [schemaHooks.validateData(apiKeyDataValidator)],
      patch: [schemaHooks.validateData(apiKeyPatchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [apiKeyPath]: ApiKeyService
  }
}
