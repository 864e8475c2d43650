import type { ClientApplication } from '../../../client.js'
import type { Channel } from '../conversations/conversations.schema.js'
import type { ConversationMessage, ConversationMessageQuery, ConversationMessageSend, ConversationMessageService } from './conversation-messages.class.js'

export type { ConversationMessage, ConversationMessageQuery, ConversationMessageSend }

const CLIENT_CHANNELS = ['whatsapp', 'instagram', 'messenger', 'webchat', 'sms', 'playground'] as const
/** The channels sent through a provider's transform-outgoing path. */
export const OUTGOING_CHANNELS = ['whatsapp', 'instagram', 'messenger', 'webchat'] as const
type OutgoingChannel = (typeof OUTGOING_CHANNELS)[number]

export const messagePath = <C extends Channel>(channel: C) => `conversation-messages-${channel}` as const
export const outgoingPath = <C extends OutgoingChannel>(channel: C) => `conversation-messages-transform-outgoing-${channel}` as const
/** Where a message of a conversation on this channel is sent. */
export const sendPathOf = (channel: Channel): string =>
  (OUTGOING_CHANNELS as readonly Channel[]).includes(channel) ? outgoingPath(channel as OutgoingChannel) : messagePath(channel)

export const messageReadMethods: Array<'find' | 'get' | 'create' | 'remove'> = ['find', 'get', 'remove']
/** sms and playground read and send on one path. */
export const messageMethods: Array<'find' | 'get' | 'create' | 'remove'> = ['find', 'get', 'create', 'remove']
export const outgoingMessageMethods = ['create'] as const

export type ConversationMessageClientService = Pick<ConversationMessageService, 'find' | 'get' | 'create' | 'remove'>
export type OutgoingMessageClientService = Pick<ConversationMessageService, 'create'>

export const conversationMessageClients = (client: ClientApplication) => {
  const connection = client.get('connection')
  for (const channel of CLIENT_CHANNELS) {
    const methods = channel === 'sms' || channel === 'playground' ? messageMethods : messageReadMethods
    client.use(messagePath(channel), connection.service(messagePath(channel)), { methods })
  }
  for (const channel of OUTGOING_CHANNELS) {
    client.use(outgoingPath(channel), connection.service(outgoingPath(channel)), { methods: [...outgoingMessageMethods] })
  }
}

declare module '../../../client.js' {
  interface ServiceTypes {
    'conversation-messages-whatsapp': ConversationMessageClientService
    'conversation-messages-instagram': ConversationMessageClientService
    'conversation-messages-messenger': ConversationMessageClientService
    'conversation-messages-webchat': ConversationMessageClientService
    'conversation-messages-sms': ConversationMessageClientService
    'conversation-messages-playground': ConversationMessageClientService
    'conversation-messages-transform-outgoing-whatsapp': OutgoingMessageClientService
    'conversation-messages-transform-outgoing-instagram': OutgoingMessageClientService
    'conversation-messages-transform-outgoing-messenger': OutgoingMessageClientService
    'conversation-messages-transform-outgoing-webchat': OutgoingMessageClientService
  }
}
