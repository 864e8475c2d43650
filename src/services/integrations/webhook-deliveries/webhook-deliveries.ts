import type { Application } from '../../../declarations.js'
import { customMethodId } from '../../../hooks/custom-method-id.js'
import { webhookDeliveries } from '../webhooks/delivery.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { WebhookDeliveryService, getOptions } from './webhook-deliveries.class.js'
import {
  webhookDeliveryQuerySchema, webhookDeliveryQueryValidator, webhookDeliveryRedeliverSchema, webhookDeliveryRedeliverValidator, webhookDeliverySchema
} from './webhook-deliveries.schema.js'
import { webhookDeliveryMethods, webhookDeliveryPath } from './webhook-deliveries.shared.js'

export * from './webhook-deliveries.class.js'
export * from './webhook-deliveries.schema.js'

export const webhookDelivery = (app: Application) => {
  app.configure(webhookDeliveries)
  tenantResource(app, {
    path: webhookDeliveryPath,
    service: new WebhookDeliveryService(getOptions(app), app),
    methods: webhookDeliveryMethods,
    description:
      "Webhook deliveries of an organization (owners and admins), read only: each event for each subscription, its status " +
      "('pending', 'delivered', 'failed'), attempts and last answer. redeliver posts one again. See docs/integrations.md.",
    schemas: { result: webhookDeliverySchema, query: webhookDeliveryQuerySchema },
    validators: { query: webhookDeliveryQueryValidator },
    roles: { all: ['owner', 'admin'] },
    custom: {
      redeliver: {
        data: webhookDeliveryRedeliverValidator,
        docs: {
          byId: true,
          data: webhookDeliveryRedeliverSchema,
          result: webhookDeliverySchema,
          description: 'POST /webhook-deliveries/{id}: posts the event again (same webhook-id and body), after the earlier events of its subscription; 409 while it is pending.'
        }
      }
    },
    koa: { before: [customMethodId] }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [webhookDeliveryPath]: WebhookDeliveryService
  }
}
