import type { Application } from '../../declarations.js'
import { storageUrlSigning } from './storage-url-signing/storage-url-signing.js'
import { webhookSubscription } from './webhook-subscriptions/webhook-subscriptions.js'
import { webhookDelivery } from './webhook-deliveries/webhook-deliveries.js'

/** The integrations domain, what connects the CRM to other systems: webhook subscriptions and deliveries, signed uploads straight to storage. */
export const integrations = (app: Application) => {
  app.configure(storageUrlSigning)
  app.configure(webhookSubscription)
  app.configure(webhookDelivery)
}
