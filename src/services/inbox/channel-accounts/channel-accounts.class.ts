import { Conflict } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { PROVIDER_ID_FIELD } from './channel-accounts.schema.js'
import type { ChannelAccount, ChannelAccountData, ChannelAccountPatch, ChannelAccountQuery } from './channel-accounts.schema.js'

export type { ChannelAccount, ChannelAccountData, ChannelAccountPatch, ChannelAccountQuery }
export type ChannelAccountParams = KnexAdapterParams<ChannelAccountQuery>

/**
 * The accounts an organization connects to its inbox. One live account per provider id in any
 * organization: the unique index decides (a concurrent second connection is a 409 too), and the
 * conflict names the config field the organization typed.
 */
export class ChannelAccountService extends RecordService<ChannelAccount, ChannelAccountData, ChannelAccountParams, ChannelAccountPatch> {
  async _create(data: any, params?: ChannelAccountParams): Promise<any> {
    return this.naming(data, () => super._create(data, params))
  }

  async _patch(id: NullableId, data: any, params?: ChannelAccountParams): Promise<any> {
    return this.naming(data, () => super._patch(id, data, params))
  }

  private async naming<T>(data: any, write: () => Promise<T>): Promise<T> {
    try {
      return await write()
    } catch (error) {
      const { code, constraint, message } = error as { code?: string; constraint?: string; message?: string }
      // On Citus the error names the shard's copy of the index (its name with the shard id
      // appended), and a worker's error reaches the client with the name in its message only.
      const index = constraint ?? /unique constraint "([^"]+)"/.exec(message ?? '')?.[1]
      if (code !== '23505' || index?.replace(/_\d+$/, '') !== 'channel_accounts_provider_unique') throw error
      const config = typeof data.config === 'string' ? JSON.parse(data.config) : data.config ?? {}
      const field = Object.values(PROVIDER_ID_FIELD).find((name) => name && name in config) ?? 'provider_id'
      throw new Conflict('This provider account is already connected', { errors: { [`config.${field}`]: 'is already connected to another channel account' } })
    }
  }
}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'channel_accounts'
})
