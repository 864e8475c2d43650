import { BadRequest, FeathersError } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import type { Channel } from '../conversations/conversations.schema.js'
import { messagePath } from '../conversation-messages/conversation-messages.shared.js'
import type { AutomationAction } from '../automations/automations.schema.js'
import type { ActionResult, AutomationExecution, AutomationExecutionData } from './automations-executions.schema.js'

export type { ActionResult, AutomationExecution, AutomationExecutionData }

/** Thrown inside the run's transaction to roll it back once an action has failed. */
class ActionFailed extends Error {}

/** A client error of an action becomes its result; anything else (a fault of the service) stays an error. */
const isActionError = (error: unknown): error is FeathersError => error instanceof FeathersError && error.code < 500

/**
 * POST /automations-executions: runs an automation's actions in order on one conversation, in
 * one transaction, each through the service that owns the change (the same rules, the same
 * events, sent after the commit). The first failing action rolls the whole run back; the
 * execution is recorded either way.
 */
export class AutomationExecutionService {
  constructor(private app: Application) {}

  async create(data: AutomationExecutionData, params: Params): Promise<AutomationExecution> {
    const knex = this.app.get('knex')
    const automation = await knex('automations')
      .first('actions')
      .where({ organization_id: data.organization_id, id: data.automation_id })
      .whereNull('deleted_at')
    const results: ActionResult[] = []
    try {
      return await inTransaction(knex, async (inside) => {
        const call = { caller: params.caller, authenticated: true, query: { organization_id: data.organization_id }, ...inside } as any
        const conversation = await inside.transaction.trx('conversations')
          .first('channel')
          .where({ organization_id: data.organization_id, id: data.conversation_id })
          .whereNull('deleted_at')
        if (!conversation) throw new BadRequest('Validation failed', { errors: { conversation_id: 'must be a conversation of this organization' } })
        for (const action of automation.actions as AutomationAction[]) {
          try {
            results.push({ type: action.type, ok: true, ...(await this.perform(action, data, conversation.channel, call)) })
          } catch (error) {
            if (!isActionError(error)) throw error
            results.push({ type: action.type, ok: false, error: { message: error.message, ...(error.errors ? { errors: error.errors } : {}) } })
            throw new ActionFailed()
          }
        }
        return this.record(inside.transaction.trx, data, params, 'succeeded', results)
      })
    } catch (error) {
      if (!(error instanceof ActionFailed)) throw error
      return this.record(knex, data, params, 'failed', results)
    }
  }

  /** One action, through the service that owns it. */
  private async perform(action: AutomationAction, data: AutomationExecutionData, channel: Channel, call: Params): Promise<Partial<ActionResult>> {
    const conversations = this.app.service('conversations')
    const target = { organization_id: data.organization_id, conversation_id: data.conversation_id }
    const send = async (body: Record<string, unknown>) => {
      const message = await this.app.service(messagePath(channel)).create({ ...target, ...body } as any, call)
      return { message_id: (message as any).id }
    }
    switch (action.type) {
      case 'send_message':
        return send({ content: action.content })
      case 'send_predefined_message':
        return send({ predefined_message_id: action.predefined_message_id })
      case 'add_note':
        return send({ content: action.content, direction: 'note' })
      case 'assign':
        await conversations.patch(data.conversation_id, { assignee_user_ids: action.user_ids }, call)
        return {}
      case 'set_status':
        await conversations.patch(data.conversation_id, { status: action.status, ...(action.snoozed_until ? { snoozed_until: action.snoozed_until } : {}) }, call)
        return {}
      case 'move_stage':
        await conversations.patch(data.conversation_id, { pipeline_id: action.pipeline_id, pipeline_stage_id: action.pipeline_stage_id }, call)
        return {}
      case 'set_ai':
        await conversations.patch(data.conversation_id, { ai_context: { enabled: action.enabled } }, call)
        return {}
    }
  }

  private async record(db: Knex, data: AutomationExecutionData, params: Params, status: 'succeeded' | 'failed', results: ActionResult[]) {
    const [execution] = await db('automation_executions')
      .insert({
        organization_id: data.organization_id,
        automation_id: data.automation_id,
        conversation_id: data.conversation_id,
        status,
        results: JSON.stringify(results),
        context: JSON.stringify(data.context ?? {}),
        created_by_user_id: params.caller?.userId ?? null
      })
      .returning('*')
    return execution as AutomationExecution
  }
}
