import type { ClientApplication } from '../../client.js'
import { storageUrlSigningClient } from './storage-url-signing/storage-url-signing.shared.js'
import { webhookSubscriptionClient } from './webhook-subscriptions/webhook-subscriptions.shared.js'
import { webhookDeliveryClient } from './webhook-deliveries/webhook-deliveries.shared.js'

/** Typed client registrations of the integrations domain, used by src/client.ts. */
export const integrationsClients = (client: ClientApplication) => {
  client.configure(storageUrlSigningClient)
  client.configure(webhookSubscriptionClient)
  client.configure(webhookDeliveryClient)
}
