import type { Application } from '../../declarations.js'
import { channelAccount } from './channel-accounts/channel-accounts.js'
import { channels } from './channels/index.js'
import { publicWebchat } from './public-webchat/public-webchat.js'
import { conversation } from './conversations/conversations.js'
import { conversationMessages } from './conversation-messages/conversation-messages.js'
import { predefinedMessage } from './conversation-predefined-messages/conversation-predefined-messages.js'
import { conversationBulkActions } from './conversations-bulk-actions/conversations-bulk-actions.js'
import { conversationFile } from './conversation-files/conversation-files.js'
import { automation } from './automations/automations.js'
import { automationExecution } from './automations-executions/automations-executions.js'

/** The inbox domain, the omnichannel inbox: channel accounts, conversations and their messages, files, predefined messages, bulk actions, automations and the public web chat. */
export const inbox = (app: Application) => {
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
}
