import type { ClientApplication } from '../../../client.js'
import type { ApiKey, ApiKeyData, ApiKeyPatch, ApiKeyQuery, ApiKeyService } from './api-keys.class.js'

export type { ApiKey, ApiKeyData, ApiKeyPatch, ApiKeyQuery }
export type ApiKeyClientService = Pick<ApiKeyService, (typeof apiKeyMethods)[number]>

export const apiKeyPath = 'api-keys'
export const apiKeyMethods: Array<keyof ApiKeyService> = ['find', 'get', 'create', 'patch', 'remove']

export const apiKeyClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(apiKeyPath, connection.service(apiKeyPath), { methods: apiKeyMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [apiKeyPath]: ApiKeyClientService
  }
}
