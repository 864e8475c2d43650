import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { AiAssistantService, getOptions } from './ai-assistants.class.js'
import {
  aiAssistantDataResolver, aiAssistantDataSchema, aiAssistantDataValidator, aiAssistantPatchResolver, aiAssistantPatchSchema,
  aiAssistantPatchValidator, aiAssistantQuerySchema, aiAssistantQueryValidator, aiAssistantResolver, aiAssistantSchema, checkToolKeys
} from './ai-assistants.schema.js'
import { aiAssistantMethods, aiAssistantPath } from './ai-assistants.shared.js'

export * from './ai-assistants.class.js'
export * from './ai-assistants.schema.js'

export const aiAssistant = (app: Application) => {
  app.use(aiAssistantPath, new AiAssistantService(getOptions(app)), {
    methods: aiAssistantMethods,
    events: [],
    docs: {
      description: 'AI assistants; internal_tools.tools enables tools by key (see GET /ai-assistant-tools); unknown keys → 400.',
      schemas: { result: aiAssistantSchema, data: aiAssistantDataSchema, patch: aiAssistantPatchSchema, query: aiAssistantQuerySchema }
    }
  } as any)
  app.service(aiAssistantPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(aiAssistantResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(aiAssistantQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(aiAssistantDataValidator), checkToolKeys, schemaHooks.resolveData(aiAssistantDataResolver)],
      patch: [schemaHooks.validateData(aiAssistantPatchValidator), checkToolKeys, schemaHooks.resolveData(aiAssistantPatchResolver)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [aiAssistantPath]: AiAssistantService
  }
}
