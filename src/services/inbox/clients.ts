import type { ClientApplication } from '../../client.js'
import { channelAccountClient } from './channel-accounts/channel-accounts.shared.js'
import { conversationClient } from './conversations/conversations.shared.js'
import { conversationMessageClients } from './conversation-messages/conversation-messages.shared.js'
import { predefinedMessageClient } from './conversation-predefined-messages/conversation-predefined-messages.shared.js'
import { bulkActionClient } from './conversations-bulk-actions/conversations-bulk-actions.shared.js'
import { conversationFileClient } from './conversation-files/conversation-files.shared.js'
import { automationClient } from './automations/automations.shared.js'
import { executionClient } from './automations-executions/automations-executions.shared.js'

/** Typed client registrations of the inbox domain, used by src/client.ts. */
export const inboxClients = (client: ClientApplication) => {
  client.configure(channelAccountClient)
  client.configure(conversationClient)
  client.configure(conversationMessageClients)
  client.configure(predefinedMessageClient)
  client.configure(bulkActionClient)
  client.configure(conversationFileClient)
  client.configure(automationClient)
  client.configure(executionClient)
}
