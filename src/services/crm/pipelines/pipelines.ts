import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { PipelineService, getOptions } from './pipelines.class.js'
import {
  pipelineDataSchema, pipelineDataValidator, pipelinePatchSchema, pipelinePatchValidator, pipelineQuerySchema,
  pipelineQueryValidator, pipelineSchema
} from './pipelines.schema.js'
import { pipelineMethods, pipelinePath } from './pipelines.shared.js'

export * from './pipelines.class.js'
export * from './pipelines.schema.js'

export const pipeline = (app: Application) =>
  tenantResource(app, {
    path: pipelinePath,
    service: new PipelineService(getOptions(app)),
    methods: pipelineMethods,
    description: "Boards of an organization: 'deal' pipelines hold deals, 'conversation' pipelines hold inbox threads. Deleting one that live deals use is refused (400); deleting one deletes its stages.",
    schemas: { result: pipelineSchema, data: pipelineDataSchema, patch: pipelinePatchSchema, query: pipelineQuerySchema },
    validators: { query: pipelineQueryValidator, data: pipelineDataValidator, patch: pipelinePatchValidator }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [pipelinePath]: PipelineService
  }
}
