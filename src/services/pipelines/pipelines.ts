import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { PipelineService, getOptions } from './pipelines.class.js'
import {
  pipelineDataSchema, pipelineDataValidator, pipelinePatchSchema, pipelinePatchValidator, pipelineQuerySchema,
  pipelineQueryValidator, pipelineResolver, pipelineSchema
} from './pipelines.schema.js'
import { pipelineMethods, pipelinePath } from './pipelines.shared.js'

export * from './pipelines.class.js'
export * from './pipelines.schema.js'

export const pipeline = (app: Application) => {
  app.use(pipelinePath, new PipelineService(getOptions(app)), {
    methods: pipelineMethods,
    events: [],
    docs: {
      description: "Boards of an organization: 'deal' pipelines hold deals, 'conversation' pipelines hold inbox threads. Deleting one that live deals use is refused (400).",
      schemas: { result: pipelineSchema, data: pipelineDataSchema, patch: pipelinePatchSchema, query: pipelineQuerySchema }
    }
  } as any)
  app.service(pipelinePath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(pipelineResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(pipelineQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(pipelineDataValidator)],
      patch: [schemaHooks.validateData(pipelinePatchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [pipelinePath]: PipelineService
  }
}
