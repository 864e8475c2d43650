import type { ClientApplication } from '../../../client.js'
import type { AiAssistantToolCallService } from './ai-assistant-tool-calls.class.js'

export const aiAssistantToolCallPath = 'ai-assistant-tool-calls'
export const aiAssistantToolCallMethods: Array<keyof AiAssistantToolCallService> = ['create']

export const aiAssistantToolCallClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(aiAssistantToolCallPath, connection.service(aiAssistantToolCallPath), { methods: aiAssistantToolCallMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [aiAssistantToolCallPath]: Pick<AiAssistantToolCallService, 'create'>
  }
}
