import { Type } from '@feathersjs/typebox'
import type { Static, TObject } from '@feathersjs/typebox'
import { dataValidator, getValidator } from '../../../validators.js'
import { RecordId, Timestamp } from '../../../schemas.js'
import { AssigneeIds, CONVERSATION_STATUSES } from '../conversations/conversations.schema.js'

export const BULK_ACTIONS = ['assign', 'unassign', 'set_status', 'mark_read', 'mark_unread', 'move_stage', 'block', 'unblock', 'delete'] as const
export type BulkAction = (typeof BULK_ACTIONS)[number]
export const MAX_BULK_IDS = 100

const none = Type.Object({}, { additionalProperties: false })

/** The params each action takes. */
export const bulkActionParams: Record<BulkAction, TObject> = {
  assign: Type.Object(
    {
      user_ids: { ...AssigneeIds, minItems: 1 },
      mode: Type.Optional(Type.Union([Type.Literal('replace'), Type.Literal('add')], { description: "'replace' (default) or 'add' to the current assignees" }))
    },
    { additionalProperties: false }
  ),
  unassign: none,
  set_status: Type.Object(
    {
      status: Type.Union(CONVERSATION_STATUSES.map((status) => Type.Literal(status))),
      snoozed_until: Type.Optional({ ...Timestamp, description: "a future time; required with 'snoozed'" })
    },
    { additionalProperties: false }
  ),
  mark_read: none,
  mark_unread: none,
  move_stage: Type.Object({ pipeline_id: RecordId, pipeline_stage_id: RecordId }, { additionalProperties: false }),
  block: none,
  unblock: none,
  delete: none
}

export const bulkActionSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    action: Type.Union(BULK_ACTIONS.map((action) => Type.Literal(action))),
    ids: Type.Array(RecordId, { minItems: 1, maxItems: MAX_BULK_IDS, description: 'live conversations of the organization' }),
    params: Type.Optional(Type.Record(Type.String(), Type.Any(), { description: 'per action: see the description' }))
  },
  { $id: 'ConversationBulkAction', additionalProperties: false }
)
export type BulkActionData = Static<typeof bulkActionSchema>
export const bulkActionValidator = getValidator(bulkActionSchema, dataValidator)

export const bulkActionResultSchema = Type.Object(
  {
    action: bulkActionSchema.properties.action,
    updated: Type.Integer({ minimum: 0 }),
    ids: Type.Array(RecordId)
  },
  { $id: 'ConversationBulkActionResult', additionalProperties: false }
)
export type BulkActionResult = Static<typeof bulkActionResultSchema>
