import { BadRequest } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Application } from '../../../declarations.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import type { BulkActionData, BulkActionResult } from './conversations-bulk-actions.schema.js'

export type { BulkActionData, BulkActionResult }

/**
 * POST /conversations-bulk-actions: one action over up to 100 conversations, all or nothing.
 * Each conversation is changed through the conversations service (its rules, its events), in
 * one transaction; the events go out after the commit.
 */
export class ConversationBulkActionService {
  constructor(private app: Application) {}

  async create(data: BulkActionData, params: Params): Promise<BulkActionResult> {
    const { action, organization_id: organizationId } = data
    const options = (data.params ?? {}) as Record<string, any>
    const ids = [...new Set(data.ids)]
    const conversations = this.app.service('conversations')
    await inTransaction(this.app.get('knex'), async (inside) => {
      const rows: { id: number; assignee_user_ids: number[] }[] = await inside.transaction.trx('conversations')
        .select('id', 'assignee_user_ids')
        .where({ organization_id: organizationId })
        .whereIn('id', ids)
        .whereNull('deleted_at')
        .orderBy('id')
        .forUpdate()
      const missing = ids.filter((id) => !rows.some((row) => row.id === id))
      if (missing.length) {
        throw new BadRequest('Validation failed', { errors: { ids: `must be live conversations of this organization (not: ${missing.join(', ')})` } })
      }
      const call = { caller: params.caller, authenticated: true, query: { organization_id: organizationId }, ...inside } as any
      for (const row of rows) {
        if (action === 'delete') await conversations.remove(row.id, call)
        else await conversations.patch(row.id, changeOf(action, options, row.assignee_user_ids), call)
      }
    })
    return { action, updated: ids.length, ids }
  }
}

/** The conversation patch an action means. */
function changeOf(action: BulkActionData['action'], options: Record<string, any>, assignees: number[]): Record<string, unknown> {
  switch (action) {
    case 'assign':
      return { assignee_user_ids: options.mode === 'add' ? [...assignees, ...options.user_ids] : options.user_ids }
    case 'unassign':
      return { assignee_user_ids: [] }
    case 'set_status':
      return options.snoozed_until === undefined ? { status: options.status } : { status: options.status, snoozed_until: options.snoozed_until }
    case 'mark_read':
      return { unread: false }
    case 'mark_unread':
      return { unread: true }
    case 'move_stage':
      return { pipeline_id: options.pipeline_id, pipeline_stage_id: options.pipeline_stage_id }
    case 'block':
      return { is_blocked: true }
    case 'unblock':
      return { is_blocked: false }
    default:
      throw new BadRequest(`Unknown action ${action}`)
  }
}
