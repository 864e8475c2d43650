import type { ClientApplication } from '../../../client.js'
import type { AiAssistantToolService } from './ai-assistant-tools.js'

export const aiAssistantToolPath = 'ai-assistant-tools'
export const aiAssistantToolMethods: Array<keyof AiAssistantToolService> = ['find']

export const aiAssistantToolClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(aiAssistantToolPath, connection.service(aiAssistantToolPath), { methods: aiAssistantToolMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [aiAssistantToolPath]: Pick<AiAssistantToolService, 'find'>
  }
}
