import type { ClientApplication } from '../../../client.js'
import type {
  PredefinedMessage, PredefinedMessageData, PredefinedMessagePatch, PredefinedMessageQuery, PredefinedMessageService
} from './conversation-predefined-messages.class.js'

export type { PredefinedMessage, PredefinedMessageData, PredefinedMessagePatch, PredefinedMessageQuery }
export type PredefinedMessageClientService = Pick<PredefinedMessageService, (typeof predefinedMessageMethods)[number]>

export const predefinedMessagePath = 'conversation-predefined-messages'
export const predefinedMessageMethods: Array<keyof PredefinedMessageService> = ['find', 'get', 'create', 'patch', 'remove']

export const predefinedMessageClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(predefinedMessagePath, connection.service(predefinedMessagePath), { methods: predefinedMessageMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [predefinedMessagePath]: PredefinedMessageClientService
  }
}
