import type { ClientApplication } from '../../../client.js'
import type { BulkActionData, BulkActionResult, ConversationBulkActionService } from './conversations-bulk-actions.class.js'

export type { BulkActionData, BulkActionResult }
export type ConversationBulkActionClientService = Pick<ConversationBulkActionService, 'create'>

export const bulkActionPath = 'conversations-bulk-actions'
export const bulkActionMethods = ['create'] as const

export const bulkActionClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(bulkActionPath, connection.service(bulkActionPath), { methods: [...bulkActionMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [bulkActionPath]: ConversationBulkActionClientService
  }
}
