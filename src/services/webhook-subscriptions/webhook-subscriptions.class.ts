import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../declarations.js'
import { idOfPath } from '../../hooks/custom-method-id.js'
import { newSecret } from '../../webhooks/sender.js'
import { RecordService } from '../../engine/record-service.js'
import type { WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery } from './webhook-subscriptions.schema.js'

export type { WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery }
export type WebhookSubscriptionParams = KnexAdapterParams<WebhookSubscriptionQuery>

/** Where an organization's events are posted; each subscription signs with its own secret. */
export class WebhookSubscriptionService extends RecordService<WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionParams, WebhookSubscriptionPatch> {
  /** POST /webhook-subscriptions/:id, X-Service-Method: rotate-secret: a new secret, returned once; the old one stops signing at once. */
  async 'rotate-secret'(data: { organization_id?: number; id?: number }, params: WebhookSubscriptionParams): Promise<WebhookSubscription> {
    const id = idOfPath(params, data)
    return this._patch(id, { secret: newSecret() } as any, { ...params, query: { organization_id: data.organization_id } } as WebhookSubscriptionParams)
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'webhook_subscriptions'
})
