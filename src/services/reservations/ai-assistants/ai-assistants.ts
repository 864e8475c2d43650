import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { AiAssistantService, getOptions } from './ai-assistants.class.js'
import {
  aiAssistantDataResolver, aiAssistantDataSchema, aiAssistantDataValidator, aiAssistantPatchResolver, aiAssistantPatchSchema, aiAssistantPatchValidator, aiAssistantQuerySchema, aiAssistantQueryValidator, aiAssistantSchema, checkToolKeys
} from './ai-assistants.schema.js'
import { aiAssistantMethods, aiAssistantPath } from './ai-assistants.shared.js'

export * from './ai-assistants.class.js'
export * from './ai-assistants.schema.js'

export const aiAssistant = (app: Application) =>
  tenantResource(app, {
    path: aiAssistantPath,
    service: new AiAssistantService(getOptions(app)),
    methods: aiAssistantMethods,
    description: 'AI assistants; internal_tools.tools enables tools by key (see GET /ai-assistant-tools); unknown keys → 400.',
    schemas: { result: aiAssistantSchema, data: aiAssistantDataSchema, patch: aiAssistantPatchSchema, query: aiAssistantQuerySchema },
    validators: { query: aiAssistantQueryValidator, data: aiAssistantDataValidator, patch: aiAssistantPatchValidator },
    resolvers: { data: aiAssistantDataResolver, patch: aiAssistantPatchResolver },
    rules: { create: [checkToolKeys], patch: [checkToolKeys] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [aiAssistantPath]: AiAssistantService
  }
}
