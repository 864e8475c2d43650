import { BadRequest } from '@feathersjs/errors'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { idOfPath } from '../../../hooks/custom-method-id.js'
import { newSecret } from '../webhooks/sender.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import type { WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery } from './webhook-subscriptions.schema.js'

export type { WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery }
export type WebhookSubscriptionParams = KnexAdapterParams<WebhookSubscriptionQuery>

export interface WebhookSubscriptionServiceOptions extends RecordServiceOptions {
  /** Live subscriptions (active or not) an organization may have. */
  maxSubscriptions: number
}

/** Where an organization's events are posted; each subscription signs with its own secret. */
export class WebhookSubscriptionService extends RecordService<WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionParams, WebhookSubscriptionPatch> {
  declare options: WebhookSubscriptionServiceOptions

  /**
   * Creates a subscription while its organization has fewer live ones than the limit: each takes
   * deliveries of every event it wants, which the outbox runs in the organization's few slots.
   */
  // `any` only to match the adapter's overloads (which include arrays); the hooks validated one WebhookSubscriptionData.
  async create(data: any, params: WebhookSubscriptionParams = {}): Promise<any> {
    const run = async (trx: Knex.Transaction) => {
      await this.assertRoomFor(trx, data.organization_id)
      return super.create(data, { ...params, transaction: { trx } } as WebhookSubscriptionParams)
    }
    return params.transaction?.trx ? run(params.transaction.trx) : this.knex.transaction(run)
  }

  /** Refuses a create beyond the limit; the lock makes concurrent creates of one organization count one after the other. */
  private async assertRoomFor(trx: Knex.Transaction, organizationId: number) {
    await trx.raw('SELECT pg_advisory_xact_lock(?::int, hashtext(?))', [organizationId, 'webhook_subscriptions'])
    const [{ live }] = await trx('webhook_subscriptions').where({ organization_id: organizationId }).whereNull('deleted_at').count({ live: '*' })
    const most = this.options.maxSubscriptions
    if (Number(live) >= most) {
      throw new BadRequest(`An organization may have at most ${most} webhook subscriptions; delete one it no longer needs before creating another`)
    }
  }

  /** POST /webhook-subscriptions/:id, X-Service-Method: rotate-secret: a new secret, returned once; the old one stops signing at once. */
  async 'rotate-secret'(data: { organization_id?: number; id?: number }, params: WebhookSubscriptionParams): Promise<WebhookSubscription> {
    const id = idOfPath(params, data)
    return this._patch(id, { secret: newSecret() } as any, { ...params, query: { organization_id: data.organization_id } } as WebhookSubscriptionParams)
  }
}

export const getOptions = (app: Application): WebhookSubscriptionServiceOptions => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'webhook_subscriptions',
  maxSubscriptions: app.get('webhookMaxSubscriptions')
})
