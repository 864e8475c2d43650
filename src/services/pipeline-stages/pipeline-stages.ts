import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { PipelineStageService, getOptions } from './pipeline-stages.class.js'
import {
  pipelineStageDataSchema, pipelineStageDataValidator, pipelineStagePatchSchema, pipelineStagePatchValidator,
  pipelineStageQuerySchema, pipelineStageQueryValidator, pipelineStageResolver, pipelineStageSchema
} from './pipeline-stages.schema.js'
import { pipelineStageMethods, pipelineStagePath } from './pipeline-stages.shared.js'

export * from './pipeline-stages.class.js'
export * from './pipeline-stages.schema.js'

export const pipelineStage = (app: Application) => {
  app.use(pipelineStagePath, new PipelineStageService(getOptions(app)), {
    methods: pipelineStageMethods,
    events: [],
    docs: {
      description: 'Stages of a pipeline, in position order. A stage stays in its pipeline; deleting one that live deals are in is refused (400).',
      schemas: { result: pipelineStageSchema, data: pipelineStageDataSchema, patch: pipelineStagePatchSchema, query: pipelineStageQuerySchema }
    }
  } as any)
  app.service(pipelineStagePath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(pipelineStageResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(pipelineStageQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(pipelineStageDataValidator), verifyReferences({ pipeline_id: { table: 'pipelines' } })],
      patch: [schemaHooks.validateData(pipelineStagePatchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [pipelineStagePath]: PipelineStageService
  }
}
