import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const PIPELINE_TYPES = ['deal', 'conversation'] as const

export const pipelineSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    type: Type.Union(PIPELINE_TYPES.map((type) => Type.Literal(type)), { description: "'deal' boards hold deals, 'conversation' boards hold inbox threads" }),
    position: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'display order, ascending' }),
    ...softDeleteTimestamps
  },
  { $id: 'Pipeline', additionalProperties: false }
)
export type Pipeline = Static<typeof pipelineSchema>


const writable = {
  name: pipelineSchema.properties.name,
  type: Type.Optional(pipelineSchema.properties.type),
  position: Type.Optional(pipelineSchema.properties.position)
}

export const pipelineDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'PipelineData', additionalProperties: false }
)
export type PipelineData = Static<typeof pipelineDataSchema>
export const pipelineDataValidator = getValidator(pipelineDataSchema, dataValidator)

export const pipelinePatchSchema = Type.Partial(Type.Object(writable), { $id: 'PipelinePatch', additionalProperties: false })
export type PipelinePatch = Static<typeof pipelinePatchSchema>
export const pipelinePatchValidator = getValidator(pipelinePatchSchema, dataValidator)

export const pipelineQuerySchema = Type.Object(
  { ...listQuery(pipelineSchema, ['organization_id', 'type', 'name', 'position', 'created_at', 'updated_at']).properties },
  { $id: 'PipelineQuery', additionalProperties: false }
)
export type PipelineQuery = Static<typeof pipelineQuerySchema>
export const pipelineQueryValidator = getValidator(pipelineQuerySchema, queryValidator)
