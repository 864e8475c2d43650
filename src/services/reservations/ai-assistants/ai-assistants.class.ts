import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { AiAssistant, AiAssistantData, AiAssistantPatch, AiAssistantQuery } from './ai-assistants.schema.js'

export type { AiAssistant, AiAssistantData, AiAssistantPatch, AiAssistantQuery }
export type AiAssistantParams = KnexAdapterParams<AiAssistantQuery>

/** AI assistants of an organization and the internal tools each may use. */
export class AiAssistantService extends RecordService<AiAssistant, AiAssistantData, AiAssistantParams, AiAssistantPatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'ai_assistants'
})
