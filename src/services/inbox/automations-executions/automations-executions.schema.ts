import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp } from '../../../schemas.js'

export const actionResultSchema = Type.Object(
  {
    type: Type.String(),
    ok: Type.Boolean(),
    error: Type.Optional(Type.Object({ message: Type.String(), errors: Type.Optional(Type.Record(Type.String(), Type.String())) })),
    message_id: Type.Optional(RecordId)
  },
  { additionalProperties: false }
)
export type ActionResult = Static<typeof actionResultSchema>

export const executionSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    automation_id: RecordId,
    conversation_id: RecordId,
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    results: Type.Array(actionResultSchema, { description: 'per action run, in order; a failed run ends with the failed action and changed nothing' }),
    context: Type.Record(Type.String(), Type.Any()),
    created_by_user_id: Nullable(RecordId),
    created_at: Timestamp,
    updated_at: Timestamp
  },
  { $id: 'AutomationExecution', additionalProperties: false }
)
export type AutomationExecution = Static<typeof executionSchema>

export const executionDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    automation_id: RecordId,
    conversation_id: RecordId,
    context: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Any(), { description: 'kept with the execution' }))
  },
  { $id: 'AutomationExecutionData', additionalProperties: false }
)
export type AutomationExecutionData = Static<typeof executionDataSchema>
export const executionDataValidator = getValidator(executionDataSchema, dataValidator)
