import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, getValidator } from '../../../validators.js'
import { RecordId } from '../../../schemas.js'

export const toolCallDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    assistant_id: RecordId,
    tool: Type.String({ minLength: 1, maxLength: 100, description: 'a key of GET /ai-assistant-tools, enabled on the assistant' }),
    arguments: Type.Optional(Type.Record(Type.String(), Type.Any(), { description: "the tool's arguments (its JSON Schema is listed by GET /ai-assistant-tools)" }))
  },
  { $id: 'AiAssistantToolCallData', additionalProperties: false }
)
export type ToolCallData = Static<typeof toolCallDataSchema>
export const toolCallDataValidator = getValidator(toolCallDataSchema, dataValidator)

export const toolCallResultSchema = Type.Object(
  { tool: Type.String(), result: Type.Any({ description: "what the tool's endpoint answers" }) },
  { $id: 'AiAssistantToolCallResult', additionalProperties: false }
)
export type ToolCallResult = Static<typeof toolCallResultSchema>
