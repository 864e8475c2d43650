import type { ClientApplication } from '../../../client.js'
import type { AutomationExecution, AutomationExecutionData, AutomationExecutionService } from './automations-executions.class.js'

export type { AutomationExecution, AutomationExecutionData }
export type AutomationExecutionClientService = Pick<AutomationExecutionService, 'create'>

export const executionPath = 'automations-executions'
export const executionMethods = ['create'] as const

export const executionClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(executionPath, connection.service(executionPath), { methods: [...executionMethods] })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [executionPath]: AutomationExecutionClientService
  }
}
