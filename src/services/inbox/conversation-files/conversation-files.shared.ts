import type { ClientApplication } from '../../../client.js'
import type { ConversationFile, ConversationFileData, ConversationFileQuery, ConversationFileService } from './conversation-files.class.js'

export type { ConversationFile, ConversationFileData, ConversationFileQuery }
export type ConversationFileClientService = Pick<ConversationFileService, (typeof conversationFileMethods)[number]>

export const conversationFilePath = 'conversation-files'
export const conversationFileMethods: Array<keyof ConversationFileService> = ['find', 'get', 'create']

export const conversationFileClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(conversationFilePath, connection.service(conversationFilePath), { methods: conversationFileMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [conversationFilePath]: ConversationFileClientService
  }
}
