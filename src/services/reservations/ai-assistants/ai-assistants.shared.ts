import type { ClientApplication } from '../../../client.js'
import type { AiAssistant, AiAssistantData, AiAssistantPatch, AiAssistantQuery, AiAssistantService } from './ai-assistants.class.js'

export type { AiAssistant, AiAssistantData, AiAssistantPatch, AiAssistantQuery }
export type AiAssistantClientService = Pick<AiAssistantService, (typeof aiAssistantMethods)[number]>

export const aiAssistantPath = 'ai-assistants'
export const aiAssistantMethods: Array<keyof AiAssistantService> = ['find', 'get', 'create', 'patch', 'remove']

export const aiAssistantClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(aiAssistantPath, connection.service(aiAssistantPath), { methods: aiAssistantMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [aiAssistantPath]: AiAssistantClientService
  }
}
