import { feathers } from '@feathersjs/feathers'
import type { Application, TransportConnection } from '@feathersjs/feathers'
import { userClient } from './services/users/users.shared.js'
import { organizationClient } from './services/organizations/organizations.shared.js'
import { membershipClient } from './services/organizations-users/organizations-users.shared.js'
import { invitationClient } from './services/organizations-users-invites/organizations-users-invites.shared.js'
import { apiKeyClient } from './services/api-keys/api-keys.shared.js'
import { companyClient } from './services/companies/companies.shared.js'
import { customFieldClient } from './services/custom-fields/custom-fields.shared.js'
import { contactClient } from './services/contacts/contacts.shared.js'
import { pipelineClient } from './services/pipelines/pipelines.shared.js'
import { pipelineStageClient } from './services/pipeline-stages/pipeline-stages.shared.js'
import { productClient } from './services/products/products.shared.js'
import { dealClient } from './services/deals/deals.shared.js'
import { dealProductClient } from './services/deal-products/deal-products.shared.js'
import { activityTypeClient } from './services/activity-types/activity-types.shared.js'
import { activityClient } from './services/activities/activities.shared.js'
import { reservationClients } from './reservations/clients.js'
import { productMediaClient } from './services/product-media/product-media.shared.js'
import { storageUrlSigningClient } from './services/storage-url-signing/storage-url-signing.shared.js'
import { channelAccountClient } from './services/channel-accounts/channel-accounts.shared.js'
import { conversationClient } from './services/conversations/conversations.shared.js'
import { conversationMessageClients } from './services/conversation-messages/conversation-messages.shared.js'
import { predefinedMessageClient } from './services/conversation-predefined-messages/conversation-predefined-messages.shared.js'
import { bulkActionClient } from './services/conversations-bulk-actions/conversations-bulk-actions.shared.js'
import { conversationFileClient } from './services/conversation-files/conversation-files.shared.js'
import { automationClient } from './services/automations/automations.shared.js'
import { executionClient } from './services/automations-executions/automations-executions.shared.js'
import { webhookSubscriptionClient } from './services/webhook-subscriptions/webhook-subscriptions.shared.js'
import { importClient } from './services/imports/imports.shared.js'
import { webhookDeliveryClient } from './services/webhook-deliveries/webhook-deliveries.shared.js'
import { personalDataErasureClient } from './services/personal-data-erasures/personal-data-erasures.shared.js'

export interface Configuration {
  connection: TransportConnection<ServiceTypes>
}

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ServiceTypes {}

export type ClientApplication = Application<ServiceTypes, Configuration>

/**
 * A typed client for every service, e.g.
 *   const client = createClient(rest('http://localhost:3030').fetch(fetch, { headers: { 'x-api-key': key } }))
 */
export const createClient = <Configuration = any>(connection: TransportConnection<ServiceTypes>) => {
  const client: ClientApplication = feathers()
  client.configure(connection)
  client.set('connection', connection)
  client.configure(userClient)
  client.configure(organizationClient)
  client.configure(membershipClient)
  client.configure(invitationClient)
  client.configure(apiKeyClient)
  client.configure(companyClient)
  client.configure(customFieldClient)
  client.configure(contactClient)
  client.configure(pipelineClient)
  client.configure(pipelineStageClient)
  client.configure(productClient)
  client.configure(dealClient)
  client.configure(dealProductClient)
  client.configure(activityTypeClient)
  client.configure(activityClient)
  client.configure(reservationClients)
  client.configure(productMediaClient)
  client.configure(storageUrlSigningClient)
  client.configure(channelAccountClient)
  client.configure(conversationClient)
  client.configure(conversationMessageClients)
  client.configure(predefinedMessageClient)
  client.configure(bulkActionClient)
  client.configure(conversationFileClient)
  client.configure(automationClient)
  client.configure(executionClient)
  client.configure(webhookSubscriptionClient)
  client.configure(importClient)
  client.configure(webhookDeliveryClient)
  client.configure(personalDataErasureClient)
  return client
}
