import type { Application, HookContext } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ApiKeyService, getOptions } from './api-keys.class.js'
import {
  apiKeyDataSchema, apiKeyDataValidator, apiKeyPatchSchema, apiKeyPatchValidator,
  apiKeyQuerySchema, apiKeyQueryValidator, apiKeySchema
} from './api-keys.schema.js'
import { apiKeyMethods, apiKeyPath } from './api-keys.shared.js'

export * from './api-keys.class.js'
export * from './api-keys.schema.js'

/** An expiry is a future instant: a key born expired is a mistake, not a key. */
const expiryInTheFuture = async (context: HookContext) => {
  const expiresAt = (context.data as { expires_at?: string | null }).expires_at
  if (typeof expiresAt === 'string' && Date.parse(expiresAt) <= Date.now()) throw fieldError('expires_at', 'must be in the future')
}

export const apiKey = (app: Application) =>
  tenantResource(app, {
    path: apiKeyPath,
    service: new ApiKeyService(getOptions(app)),
    methods: apiKeyMethods,
    description: 'API keys of an organization (owner or admin). The plain key is returned once, by create; DELETE revokes.',
    schemas: { result: apiKeySchema, data: apiKeyDataSchema, patch: apiKeyPatchSchema, query: apiKeyQuerySchema },
    validators: { query: apiKeyQueryValidator, data: apiKeyDataValidator, patch: apiKeyPatchValidator },
    hidden: ['key_hash'],
    roles: { all: ['owner', 'admin'] },
    secretFields: ['key'],
    // A key never manages keys: that would let it outlive its own revocation.
    refuseApiKeys: true,
    rules: { create: [expiryInTheFuture], patch: [expiryInTheFuture] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [apiKeyPath]: ApiKeyService
  }
}
