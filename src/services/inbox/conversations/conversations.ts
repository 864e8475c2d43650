import type { Application, HookContext } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { loadBefore, targetOrganization } from '../../../hooks/tenant-scope.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ConversationService, LIST_JOINS, RECORD_JOINS, getOptions } from './conversations.class.js'
import {
  DEFAULT_AI_CONTEXT, conversationDataSchema, conversationDataValidator, conversationPatchSchema, conversationPatchValidator,
  conversationQuerySchema, conversationQueryValidator, conversationSchema
} from './conversations.schema.js'
import { conversationMethods, conversationPath } from './conversations.shared.js'
import { databaseOf } from '../../../db.js'

export * from './conversations.class.js'
export * from './conversations.schema.js'

type ConversationContext = HookContext<ConversationService>


/** Assignees are members of the conversation's organization; repeated ids are kept once. */
const checkAssignees = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.assignee_user_ids === undefined) return
  const ids: number[] = [...new Set<number>(data.assignee_user_ids)]
  data.assignee_user_ids = ids
  if (ids.length === 0) return
  const members: number[] = await databaseOf(context.params, context.app.get('knex'))('organizations_users')
    .where({ organization_id: await targetOrganization(context) })
    .whereIn('user_id', ids)
    .pluck('user_id')
  const outsiders = ids.filter((id) => !members.includes(id))
  if (outsiders.length) throw fieldError('assignee_user_ids', `must be members of this organization (not: ${outsiders.join(', ')})`)
}

/**
 * 'snoozed' needs a future snoozed_until; every other status clears it. A snoozed_until sent
 * alone moves the wake-up time of a snoozed conversation.
 */
const checkSnooze = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.status === undefined && data.snoozed_until === undefined) return
  const stored = context.method === 'patch' ? await loadBefore(context) : undefined
  const status = data.status ?? stored?.status ?? 'open'
  if (status !== 'snoozed') {
    if (data.snoozed_until) throw fieldError('snoozed_until', "can only be set with status 'snoozed'")
    data.snoozed_until = null
    return
  }
  if (!data.snoozed_until) throw fieldError('snoozed_until', "is required with status 'snoozed': a future time")
  if (new Date(data.snoozed_until).getTime() <= Date.now()) throw fieldError('snoozed_until', 'must be in the future')
  data.status = 'snoozed'
}

/**
 * A conversation sits on a stage of a 'conversation' pipeline (the pipeline's type is checked
 * with the references), or on none: pipeline_id and pipeline_stage_id are set or cleared together,
 * and a stage sent alone must belong to the stored pipeline.
 */
const checkStage = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.pipeline_id === undefined && data.pipeline_stage_id === undefined) return
  if (data.pipeline_id === null) {
    if (data.pipeline_stage_id) throw fieldError('pipeline_stage_id', 'must be null when pipeline_id is null')
    data.pipeline_stage_id = null
    return
  }
  if (data.pipeline_stage_id === null || (data.pipeline_id !== undefined && data.pipeline_stage_id === undefined)) {
    throw fieldError('pipeline_stage_id', 'is required with pipeline_id: a stage of that pipeline')
  }
  const pipelineId = data.pipeline_id ?? (context.method === 'patch' ? (await loadBefore(context)).pipeline_id : null)
  if (!pipelineId) throw fieldError('pipeline_id', 'is required with pipeline_stage_id')
  const stage = await databaseOf(context.params, context.app.get('knex'))('pipeline_stages')
    .first('id')
    .where({ organization_id: await targetOrganization(context), id: data.pipeline_stage_id, pipeline_id: pipelineId })
    .whereNull('deleted_at')
  if (!stage) throw fieldError('pipeline_stage_id', "must be a stage of the conversation's pipeline")
}

/** unread is not stored: false sets unread_count to 0, true to at least 1 (an unread thread keeps its count). */
const applyUnread = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.unread === undefined) return
  const unread = data.unread === true
  delete data.unread
  data.unread_count = !unread ? 0 : context.method === 'create' ? 1 : context.app.get('knex').raw('greatest(conversations.unread_count, 1)')
}

/**
 * ai_context is merged into the stored one: the fields sent replace theirs, variables are merged
 * key by key. On patch the merge happens in the UPDATE itself, so concurrent changes of different
 * keys both survive.
 */
const mergeAiContext = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.ai_context === undefined) return
  const { variables = {}, ...fields } = data.ai_context as Record<string, any>
  if (fields.paused_until) fields.paused_until = new Date(fields.paused_until).toISOString()
  if (context.method === 'create') {
    data.ai_context = JSON.stringify({ ...DEFAULT_AI_CONTEXT, ...fields, variables })
    return
  }
  data.ai_context = context.app.get('knex').raw(
    "jsonb_set(conversations.ai_context || ?::jsonb, '{variables}', coalesce(conversations.ai_context -> 'variables', '{}'::jsonb) || ?::jsonb)",
    [JSON.stringify(fields), JSON.stringify(variables)]
  )
}

/** A conversation delivered through a channel account is on that account's channel. */
const checkChannelAccount = async (context: ConversationContext) => {
  const data = context.data as Record<string, any>
  if (data.channel_account_id === undefined) return
  const account = await databaseOf(context.params, context.app.get('knex'))('channel_accounts')
    .first('channel')
    .where({ organization_id: await targetOrganization(context), id: data.channel_account_id })
  if (account && account.channel !== data.channel) {
    throw fieldError('channel_account_id', `is a ${account.channel} account: open a ${account.channel} conversation with it`)
  }
}

const conversationRules = [checkAssignees, checkSnooze, checkStage, applyUnread, mergeAiContext]

export const conversation = (app: Application) =>
  tenantResource(app, {
    path: conversationPath,
    service: new ConversationService(getOptions(app)),
    methods: conversationMethods,
    description: "Inbox threads of an organization on WhatsApp, Instagram, Messenger, web chat, SMS and the playground ($limit at most 50); see docs/conversations.md. Deleting one deletes its messages and files.",
    schemas: { result: conversationSchema, data: conversationDataSchema, patch: conversationPatchSchema, query: conversationQuerySchema },
    validators: { query: conversationQueryValidator, data: conversationDataValidator, patch: conversationPatchValidator },
    references: {
      contact_id: { table: 'contacts' },
      channel_account_id: { table: 'channel_accounts' },
      pipeline_id: { table: 'pipelines', where: { type: 'conversation' }, label: 'conversation pipeline' }
    },
    joins: { flag: 'fastJoinForConversationList', list: LIST_JOINS, record: RECORD_JOINS },
    rules: { create: [checkChannelAccount, ...conversationRules], patch: conversationRules }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [conversationPath]: ConversationService
  }
}
