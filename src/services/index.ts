import type { Application } from '../declarations.js'
import { user } from './users/users.js'
import { organization } from './organizations/organizations.js'
import { organizationUser } from './organizations-users/organizations-users.js'
import { invitation } from './organizations-users-invites/organizations-users-invites.js'
import { apiKey } from './api-keys/api-keys.js'
import { company } from './companies/companies.js'
import { customField } from './custom-fields/custom-fields.js'
import { contact } from './contacts/contacts.js'
import { pipeline } from './pipelines/pipelines.js'
import { pipelineStage } from './pipeline-stages/pipeline-stages.js'
import { product } from './products/products.js'
import { deal } from './deals/deals.js'
import { dealProduct } from './deal-products/deal-products.js'
import { activityType } from './activity-types/activity-types.js'
import { activity } from './activities/activities.js'
import { reservationServices } from '../reservations/services.js'
import { productMedia } from './product-media/product-media.js'
import { storageUrlSigning } from './storage-url-signing/storage-url-signing.js'
import { channelAccount } from './channel-accounts/channel-accounts.js'
import { channels } from '../channels/index.js'
import { publicWebchat } from './public-webchat/public-webchat.js'
import { conversation } from './conversations/conversations.js'
import { conversationMessages } from './conversation-messages/conversation-messages.js'
import { predefinedMessage } from './conversation-predefined-messages/conversation-predefined-messages.js'
import { conversationBulkActions } from './conversations-bulk-actions/conversations-bulk-actions.js'
import { conversationFile } from './conversation-files/conversation-files.js'
import { automation } from './automations/automations.js'
import { automationExecution } from './automations-executions/automations-executions.js'
import { webhookSubscription } from './webhook-subscriptions/webhook-subscriptions.js'
import { webhookDelivery } from './webhook-deliveries/webhook-deliveries.js'
import { personalDataErasure } from './personal-data-erasures/personal-data-erasures.js'
import { importService } from './imports/imports.js'

// One line per service; each resource's registration, hooks and docs live in its own folder.
export const services = (app: Application) => {
  app.configure(user)
  app.configure(organization)
  app.configure(organizationUser)
  app.configure(invitation)
  app.configure(apiKey)
  app.configure(company)
  app.configure(customField)
  app.configure(contact)
  app.configure(pipeline)
  app.configure(pipelineStage)
  app.configure(product)
  app.configure(deal)
  app.configure(dealProduct)
  app.configure(activityType)
  app.configure(activity)
  app.configure(reservationServices)
  app.configure(productMedia)
  app.configure(storageUrlSigning)
  app.configure(channelAccount)
  app.configure(channels)
  app.configure(publicWebchat)
  app.configure(conversation)
  app.configure(conversationMessages)
  app.configure(predefinedMessage)
  app.configure(conversationBulkActions)
  app.configure(conversationFile)
  app.configure(automation)
  app.configure(automationExecution)
  app.configure(webhookSubscription)
  app.configure(webhookDelivery)
  app.configure(personalDataErasure)
  app.configure(importService)
}
