import type { ClientApplication } from '../../../client.js'
import type { Conversation, ConversationData, ConversationPatch, ConversationQuery, ConversationService } from './conversations.class.js'

export type { Conversation, ConversationData, ConversationPatch, ConversationQuery }
export type ConversationClientService = Pick<ConversationService, (typeof conversationMethods)[number]>

export const conversationPath = 'conversations'
export const conversationMethods: Array<keyof ConversationService> = ['find', 'get', 'create', 'patch', 'remove']

export const conversationClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(conversationPath, connection.service(conversationPath), { methods: conversationMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [conversationPath]: ConversationClientService
  }
}
