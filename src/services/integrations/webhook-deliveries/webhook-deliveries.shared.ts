import type { ClientApplication } from '../../../client.js'
import type { WebhookDelivery, WebhookDeliveryQuery, WebhookDeliveryService } from './webhook-deliveries.class.js'

export type { WebhookDelivery, WebhookDeliveryQuery }
export type WebhookDeliveryClientService = Pick<WebhookDeliveryService, (typeof webhookDeliveryMethods)[number]>

export const webhookDeliveryPath = 'webhook-deliveries'
export const webhookDeliveryMethods = ['find', 'get', 'redeliver'] as const

export const webhookDeliveryClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(webhookDeliveryPath, connection.service(webhookDeliveryPath), { methods: [...webhookDeliveryMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [webhookDeliveryPath]: WebhookDeliveryClientService
  }
}
