import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { fieldErrors } from '../../../hooks/validation-messages.js'
import { dataValidator } from '../../../validators.js'
import { tenantOperation } from '../../../engine/tenant-operation.js'
import { ConversationBulkActionService } from './conversations-bulk-actions.class.js'
import { BULK_ACTIONS, bulkActionParams, bulkActionResultSchema, bulkActionSchema, bulkActionValidator } from './conversations-bulk-actions.schema.js'
import { bulkActionMethods, bulkActionPath } from './conversations-bulk-actions.shared.js'

export * from './conversations-bulk-actions.class.js'
export * from './conversations-bulk-actions.schema.js'

const paramsValidators = Object.fromEntries(BULK_ACTIONS.map((action) => [action, dataValidator.compile(bulkActionParams[action])]))

/** params fit the action (errors named params.<field>). */
const validateActionParams = async (context: HookContext) => {
  const data = context.data as Record<string, any>
  const validate = paramsValidators[data.action]
  if (validate(data.params ?? {})) return
  const errors: Record<string, string> = {}
  for (const [field, message] of Object.entries(fieldErrors((validate.errors ?? []) as any))) {
    errors[field === 'body' ? 'params' : `params.${field}`] = message
  }
  throw new BadRequest('Validation failed', { errors })
}

export const conversationBulkActions = (app: Application) =>
  tenantOperation(app, {
    path: bulkActionPath,
    summary: 'Run one action over 1-100 conversations, all or nothing',
    service: new ConversationBulkActionService(app),
    methods: bulkActionMethods,
    description:
      "One action over 1-100 conversations, all or nothing: assign {user_ids, mode: 'replace'|'add'}, unassign, set_status {status, snoozed_until?}, " +
      'mark_read, mark_unread, move_stage {pipeline_id, pipeline_stage_id}, block, unblock, delete. An id that is not a live conversation of the ' +
      'organization is a 400 naming it (errors.ids) and nothing changes; a rule a conversation breaks is a 400 and nothing changes.',
    schemas: { data: bulkActionSchema, result: bulkActionResultSchema },
    validators: { data: bulkActionValidator },
    rules: { create: [validateActionParams] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [bulkActionPath]: ConversationBulkActionService
  }
}
