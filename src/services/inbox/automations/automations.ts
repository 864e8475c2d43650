import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { AutomationService, getOptions } from './automations.class.js'
import {
  automationDataResolver, automationDataSchema, automationDataValidator, automationPatchResolver, automationPatchSchema,
  automationPatchValidator, automationQuerySchema, automationQueryValidator, automationSchema
} from './automations.schema.js'
import { automationMethods, automationPath } from './automations.shared.js'

export * from './automations.class.js'
export * from './automations.schema.js'

export const automation = (app: Application) =>
  tenantResource(app, {
    path: automationPath,
    service: new AutomationService(getOptions(app)),
    methods: automationMethods,
    description:
      'Inbox automations: ordered actions (send_message, send_predefined_message, assign, set_status, move_stage, add_note, set_ai) run on a conversation by POST /automations-executions. $limit at most 50.',
    schemas: { result: automationSchema, data: automationDataSchema, patch: automationPatchSchema, query: automationQuerySchema },
    validators: { query: automationQueryValidator, data: automationDataValidator, patch: automationPatchValidator },
    resolvers: { data: automationDataResolver, patch: automationPatchResolver }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [automationPath]: AutomationService
  }
}
