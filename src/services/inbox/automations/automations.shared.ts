import type { ClientApplication } from '../../../client.js'
import type { Automation, AutomationData, AutomationPatch, AutomationQuery, AutomationService } from './automations.class.js'

export type { Automation, AutomationData, AutomationPatch, AutomationQuery }
export type AutomationClientService = Pick<AutomationService, (typeof automationMethods)[number]>

export const automationPath = 'automations'
export const automationMethods: Array<keyof AutomationService> = ['find', 'get', 'create', 'patch', 'remove']

export const automationClient = (client: ClientApplication) => {
  const connection = client.get('connection')
  client.use(automationPath, connection.service(automationPath), { methods: automationMethods })
}

declare module '../../../client.js' {
  interface ServiceTypes {
    [automationPath]: AutomationClientService
  }
}
