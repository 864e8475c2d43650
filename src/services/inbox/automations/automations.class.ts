import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Automation, AutomationData, AutomationPatch, AutomationQuery } from './automations.schema.js'

export type { Automation, AutomationData, AutomationPatch, AutomationQuery }
export type AutomationParams = KnexAdapterParams<AutomationQuery>

/** Automations of the inbox; they are run by POST /automations-executions. */
export class AutomationService extends RecordService<Automation, AutomationData, AutomationParams, AutomationPatch> {}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'automations'
})
