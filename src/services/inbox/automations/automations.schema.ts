import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static, TLiteral, TProperties } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { AssigneeIds, CONVERSATION_STATUSES } from '../conversations/conversations.schema.js'

const action = <T extends string, P extends TProperties = {}>(type: T, fields: P = {} as P) =>
  Type.Object({ type: Type.Literal(type), ...fields } as { type: TLiteral<T> } & P, { additionalProperties: false })

/** One step of an automation; each runs through the service that owns the change. */
export const automationActionSchema = Type.Union([
  action('send_message', { content: Type.String({ minLength: 1, maxLength: 10_000 }) }),
  action('send_predefined_message', { predefined_message_id: RecordId }),
  action('assign', { user_ids: AssigneeIds }),
  action('set_status', {
    status: Type.Union(CONVERSATION_STATUSES.map((status) => Type.Literal(status))),
    snoozed_until: Type.Optional(Timestamp)
  }),
  action('move_stage', { pipeline_id: RecordId, pipeline_stage_id: RecordId }),
  action('add_note', { content: Type.String({ minLength: 1, maxLength: 10_000 }) }),
  action('set_ai', { enabled: Type.Boolean() })
])
export type AutomationAction = Static<typeof automationActionSchema>

export const automationSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    is_active: Type.Boolean(),
    actions: Type.Array(automationActionSchema, { minItems: 1, maxItems: 20, description: 'run in order; the first failure rolls the whole run back' }),
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'Automation', additionalProperties: false }
)
export type Automation = Static<typeof automationSchema>

const writable = Type.Pick(automationSchema, ['name', 'is_active', 'actions'])

export const automationDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    name: writable.properties.name,
    actions: writable.properties.actions,
    is_active: Type.Optional(writable.properties.is_active)
  },
  { $id: 'AutomationData', additionalProperties: false }
)
export type AutomationData = Static<typeof automationDataSchema>
export const automationDataValidator = getValidator(automationDataSchema, dataValidator)

export const automationPatchSchema = Type.Partial(writable, { $id: 'AutomationPatch', additionalProperties: false, minProperties: 1 })
export type AutomationPatch = Static<typeof automationPatchSchema>
export const automationPatchValidator = getValidator(automationPatchSchema, dataValidator)

const storedActions = async (value: unknown) => (value === undefined ? value : JSON.stringify(value))
export const automationDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  actions: storedActions
})
export const automationPatchResolver = resolve<any, HookContext>({ actions: storedActions })

export const automationQuerySchema = Type.Object(
  { ...listQuery(automationSchema, ['organization_id', 'is_active', 'name', 'created_by_user_id', 'created_at', 'updated_at']).properties },
  { $id: 'AutomationQuery', additionalProperties: false }
)
export type AutomationQuery = Static<typeof automationQuerySchema>
export const automationQueryValidator = getValidator(automationQuerySchema, queryValidator)
