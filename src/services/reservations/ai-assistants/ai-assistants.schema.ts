import { BadRequest } from '@feathersjs/errors'
import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { TOOL_KEYS, isToolKey } from '../ai-assistant-tools/tools.js'

export const internalToolsSchema = Type.Object(
  {
    tools: Type.Record(Type.String(), Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false }), {
      description: `tool key → {enabled}; keys among ${TOOL_KEYS.join(', ')}`
    })
  },
  { additionalProperties: false }
)

export const aiAssistantSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    instructions: Nullable(Type.String({ maxLength: 50_000 })),
    internal_tools: internalToolsSchema,
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'AiAssistant', additionalProperties: false }
)
export type AiAssistant = Static<typeof aiAssistantSchema>

const p = aiAssistantSchema.properties
const changeable = { name: p.name, instructions: Type.Optional(p.instructions), internal_tools: Type.Optional(p.internal_tools) }

export const aiAssistantDataSchema = Type.Object({ organization_id: Type.Optional(RecordId), ...changeable }, { $id: 'AiAssistantData', additionalProperties: false })
export type AiAssistantData = Static<typeof aiAssistantDataSchema>
export const aiAssistantDataValidator = getValidator(aiAssistantDataSchema, dataValidator)

export const aiAssistantPatchSchema = Type.Partial(Type.Object(changeable), { $id: 'AiAssistantPatch', additionalProperties: false })
export type AiAssistantPatch = Static<typeof aiAssistantPatchSchema>
export const aiAssistantPatchValidator = getValidator(aiAssistantPatchSchema, dataValidator)

const storeTools = async (value: unknown) => (value === undefined ? value : JSON.stringify(value))
export const aiAssistantDataResolver = resolve<any, HookContext>({
  internal_tools: async (value) => JSON.stringify(value ?? { tools: {} }),
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null
})
export const aiAssistantPatchResolver = resolve<any, HookContext>({ internal_tools: storeTools })

export const aiAssistantQuerySchema = Type.Object(
  { ...listQuery(aiAssistantSchema, ['organization_id', 'name', 'created_by_user_id', 'created_at', 'updated_at'], { operators: { name: { $ilike: Type.String() } } }).properties },
  { $id: 'AiAssistantQuery', additionalProperties: false }
)
export type AiAssistantQuery = Static<typeof aiAssistantQuerySchema>
export const aiAssistantQueryValidator = getValidator(aiAssistantQuerySchema, queryValidator)

/** Every key of internal_tools.tools must be a known tool (400 naming the unknown ones). */
export const checkToolKeys = async (context: HookContext) => {
  const tools = (context.data as AiAssistantPatch).internal_tools?.tools ?? {}
  const errors: Record<string, string> = {}
  for (const key of Object.keys(tools)) {
    if (!isToolKey(key)) errors[`internal_tools.tools.${key}`] = `is not a tool; tools are ${TOOL_KEYS.join(', ')}`
  }
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })
  return context
}
