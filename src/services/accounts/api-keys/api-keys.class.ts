import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { generateApiKey } from '../../../authentication.js'
import { RecordService } from '../../../engine/record-service.js'
import type { ApiKey, ApiKeyData, ApiKeyPatch, ApiKeyQuery } from './api-keys.schema.js'

export type { ApiKey, ApiKeyData, ApiKeyPatch, ApiKeyQuery }
export type ApiKeyParams = KnexAdapterParams<ApiKeyQuery>

/** Keys are stored as a SHA-256 hash and a short public prefix; the secret is shown once. */
export class ApiKeyService extends RecordService<ApiKey, ApiKeyData, ApiKeyParams, ApiKeyPatch> {
  async create(data: any, params: ApiKeyParams = {}): Promise<any> {
    const { key, prefix, hash } = generateApiKey()
    const created = await super._create(
      { ...data, user_id: params.caller!.userId, prefix, key_hash: hash } as any,
      params
    )
    return { ...created, key }
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'api_keys'
})
