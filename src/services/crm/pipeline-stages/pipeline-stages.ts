import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { PipelineStageService, getOptions } from './pipeline-stages.class.js'
import {
  pipelineStageDataSchema, pipelineStageDataValidator, pipelineStagePatchSchema, pipelineStagePatchValidator,
  pipelineStageQuerySchema, pipelineStageQueryValidator, pipelineStageSchema
} from './pipeline-stages.schema.js'
import { pipelineStageMethods, pipelineStagePath } from './pipeline-stages.shared.js'

export * from './pipeline-stages.class.js'
export * from './pipeline-stages.schema.js'

export const pipelineStage = (app: Application) =>
  tenantResource(app, {
    path: pipelineStagePath,
    service: new PipelineStageService(getOptions(app)),
    methods: pipelineStageMethods,
    description: 'Stages of a pipeline, in position order. A stage stays in its pipeline; deleting one that live deals are in is refused (400).',
    schemas: { result: pipelineStageSchema, data: pipelineStageDataSchema, patch: pipelineStagePatchSchema, query: pipelineStageQuerySchema },
    validators: { query: pipelineStageQueryValidator, data: pipelineStageDataValidator, patch: pipelineStagePatchValidator },
    references: { pipeline_id: { table: 'pipelines' } }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [pipelineStagePath]: PipelineStageService
  }
}
