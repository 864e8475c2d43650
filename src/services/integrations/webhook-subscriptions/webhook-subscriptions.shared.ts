import type { ClientApplication } from '../../../client.js'
import type {
  WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery, WebhookSubscriptionService
} from './webhook-subscriptions.class.js'

export type { WebhookSubscription, WebhookSubscriptionData, WebhookSubscriptionPatch, WebhookSubscriptionQuery }
export type WebhookSubscriptionClientService = Pick<WebhookSubscriptionService, (typeof webhookSubscriptionMethods)[number]>

export const webhookSubscriptionPath = 'webhook-subscriptions'
export const webhookSubscriptionMethods = ['find', 'get', 'create', 'patch', 'remove', 'rotate-secret'] as const

export const webhookSubscriptionClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(webhookSubscriptionPath, connection.service(webhookSubscriptionPath), { methods: [...webhookSubscriptionMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [webhookSubscriptionPath]: WebhookSubscriptionClientService
  }
}
