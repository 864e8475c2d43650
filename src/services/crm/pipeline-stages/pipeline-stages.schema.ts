import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const pipelineStageSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    pipeline_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 200 }),
    position: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'order within the pipeline, ascending' }),
    probability: Nullable(Type.Integer({ minimum: 0, maximum: 100, description: 'chance of winning a deal in this stage, in percent' })),
    ...softDeleteTimestamps
  },
  { $id: 'PipelineStage', additionalProperties: false }
)
export type PipelineStage = Static<typeof pipelineStageSchema>


const changeable = {
  name: pipelineStageSchema.properties.name,
  position: Type.Optional(pipelineStageSchema.properties.position),
  probability: Type.Optional(pipelineStageSchema.properties.probability)
}

export const pipelineStageDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), pipeline_id: RecordId, ...changeable },
  { $id: 'PipelineStageData', additionalProperties: false }
)
export type PipelineStageData = Static<typeof pipelineStageDataSchema>
export const pipelineStageDataValidator = getValidator(pipelineStageDataSchema, dataValidator)

// A stage stays in its pipeline: the deals in it reference the (pipeline, stage) pair.
export const pipelineStagePatchSchema = Type.Partial(Type.Object(changeable), { $id: 'PipelineStagePatch', additionalProperties: false })
export type PipelineStagePatch = Static<typeof pipelineStagePatchSchema>
export const pipelineStagePatchValidator = getValidator(pipelineStagePatchSchema, dataValidator)

export const pipelineStageQuerySchema = Type.Object(
  { ...listQuery(pipelineStageSchema, ['organization_id', 'pipeline_id', 'name', 'position', 'probability', 'created_at', 'updated_at']).properties },
  { $id: 'PipelineStageQuery', additionalProperties: false }
)
export type PipelineStageQuery = Static<typeof pipelineStageQuerySchema>
export const pipelineStageQueryValidator = getValidator(pipelineStageQuerySchema, queryValidator)
