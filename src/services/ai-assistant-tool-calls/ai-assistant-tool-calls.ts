import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { AiAssistantToolCallService } from './ai-assistant-tool-calls.class.js'
import { toolCallDataSchema, toolCallDataValidator, toolCallResultSchema } from './ai-assistant-tool-calls.schema.js'
import { aiAssistantToolCallMethods, aiAssistantToolCallPath } from './ai-assistant-tool-calls.shared.js'

export * from './ai-assistant-tool-calls.class.js'
export * from './ai-assistant-tool-calls.schema.js'

export const aiAssistantToolCall = (app: Application) => {
  app.use(aiAssistantToolCallPath, new AiAssistantToolCallService(app), {
    methods: aiAssistantToolCallMethods,
    events: [],
    docs: {
      description: "Runs an enabled tool of an assistant through its endpoint (find_reservations → GET /reservations, create_reservation → POST /reservations with source 'assistant', update_reservation → PATCH /reservations/:id, get_reservation_services → GET /reservation-services, get_available_slots → GET /reservation-available-slots) with the caller's organization scope; answers {tool, result} or the endpoint's error. A disabled or unknown tool → 400.",
      schemas: { result: toolCallResultSchema, data: toolCallDataSchema }
    }
  } as any)
  app.service(aiAssistantToolCallPath).hooks({
    around: { all: [authenticated] },
    before: { create: [schemaHooks.validateData(toolCallDataValidator), scopeToTenant()] }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [aiAssistantToolCallPath]: AiAssistantToolCallService
  }
}
