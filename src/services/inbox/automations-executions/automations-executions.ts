import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { verifyReferences } from '../../../hooks/references.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { AutomationExecutionService } from './automations-executions.class.js'
import { executionDataSchema, executionDataValidator, executionSchema } from './automations-executions.schema.js'
import { executionMethods, executionPath } from './automations-executions.shared.js'

export * from './automations-executions.class.js'
export * from './automations-executions.schema.js'

/** An automation that is switched off does not run. */
const refuseInactive = async (context: HookContext) => {
  const data = context.data as Record<string, any>
  const automation = await context.app.get('knex')('automations')
    .first('is_active')
    .where({ organization_id: data.organization_id, id: data.automation_id })
  if (!automation.is_active) throw new BadRequest('Validation failed', { errors: { automation_id: 'is not active' } })
}

export const automationExecution = (app: Application) =>
  tenantOperation(app, {
    path: executionPath,
    summary: 'Run an automation on a conversation',
    service: new AutomationExecutionService(app),
    methods: executionMethods,
    description:
      "Runs an automation on a conversation: its actions in order, in one transaction. 201 with the execution; when an action fails, nothing changed, status is 'failed' and results end with the failed action.",
    schemas: { data: executionDataSchema, result: executionSchema },
    validators: { data: executionDataValidator },
    rules: {
      create: [
        verifyReferences({ automation_id: { table: 'automations' }, conversation_id: { table: 'conversations' } }),
        refuseInactive
      ]
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [executionPath]: AutomationExecutionService
  }
}
