import type { Application } from '../../../declarations.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { AiAssistantToolCallService } from './ai-assistant-tool-calls.class.js'
import { toolCallDataSchema, toolCallDataValidator, toolCallResultSchema } from './ai-assistant-tool-calls.schema.js'
import { aiAssistantToolCallMethods, aiAssistantToolCallPath } from './ai-assistant-tool-calls.shared.js'

export * from './ai-assistant-tool-calls.class.js'
export * from './ai-assistant-tool-calls.schema.js'

export const aiAssistantToolCall = (app: Application) =>
  tenantOperation(app, {
    path: aiAssistantToolCallPath,
    summary: 'Run a tool of an AI assistant',
    service: new AiAssistantToolCallService(app),
    methods: aiAssistantToolCallMethods,
    description: "Runs an enabled tool of an assistant through its endpoint (find_reservations → GET /reservations, create_reservation → POST /reservations with source 'assistant', update_reservation → PATCH /reservations/:id, get_reservation_services → GET /reservation-services, get_available_slots → GET /reservation-available-slots) with the caller's organization scope; answers {tool, result} or the endpoint's error. A disabled or unknown tool → 400.",
    schemas: { result: toolCallResultSchema, data: toolCallDataSchema },
    validators: { data: toolCallDataValidator }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [aiAssistantToolCallPath]: AiAssistantToolCallService
  }
}
