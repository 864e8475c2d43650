import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Relation } from '../../../engine/read-model.js'
import { containsPattern } from '../../../engine/search.js'
import type { Conversation, ConversationData, ConversationPatch, ConversationQuery } from './conversations.schema.js'

export type { Conversation, ConversationData, ConversationPatch, ConversationQuery }
export type ConversationParams = KnexAdapterParams<ConversationQuery>

const CONTACT: Relation = {
  from: 'contact_id', as: 'contact', table: 'contacts',
  columns: ['id', 'first_name', 'last_name', 'email', 'phone', 'avatar_url']
}
const PIPELINE_STAGE: Relation = { from: 'pipeline_stage_id', as: 'pipeline_stage', table: 'pipeline_stages', columns: ['id', 'name'] }

/** The assignees, {id, first_name, last_name}, in the stored order. */
const ASSIGNEES: Relation = { as: 'assignees', table: 'users', columns: ['id', 'first_name', 'last_name'], tenant: false, listedIn: 'assignee_user_ids' }

/** fastJoinForConversationList: contact and assignees. */
export const LIST_JOINS = [CONTACT, ASSIGNEES]
/** GET /conversations/:id: contact, assignees and pipeline stage. */
export const RECORD_JOINS = [CONTACT, ASSIGNEES, PIPELINE_STAGE]

/** The list filters that are not columns: they become conditions of the list's statement. */
interface DerivedFilters {
  assignee_user_id?: number
  unassigned?: boolean
  unread?: boolean
  searchTerm?: string
}

export class ConversationService extends RecordService<Conversation, ConversationData, ConversationParams, ConversationPatch> {
  /** The inbox: newest activity first unless the caller sorts, with the derived filters applied in SQL. */
  async find(params: ConversationParams = {}): Promise<any> {
    const { assignee_user_id, unassigned, unread, searchTerm, ...query } = (params.query ?? {}) as Record<string, any>
    query.$sort ??= { last_message_at: -1 }
    const scoped = { ...params, query } as ConversationParams
    const derived: DerivedFilters = { assignee_user_id, unassigned, unread, searchTerm }
    if (Object.values(derived).every((value) => value === undefined)) return super.find(scoped)
    return super.find({ ...scoped, knex: this.withDerivedFilters(this.createQuery(scoped), derived, query.organization_id) })
  }

  private withDerivedFilters(builder: Knex.QueryBuilder, filters: DerivedFilters, organizationId: number) {
    const { assignee_user_id, unassigned, unread, searchTerm } = filters
    if (assignee_user_id !== undefined) builder.whereRaw('conversations.assignee_user_ids @> ARRAY[?]::integer[]', [assignee_user_id])
    if (unassigned !== undefined) builder.whereRaw(`cardinality(conversations.assignee_user_ids) ${unassigned ? '=' : '>'} 0`)
    if (unread !== undefined) builder.where('conversations.unread_count', unread ? '>' : '=', 0)
    if (searchTerm !== undefined) builder.where((q) => this.matchingTerm(q, searchTerm, organizationId))
    return builder
  }

  /**
   * searchTerm: the contact's name (folded like the contact search), e-mail or phone digits, or
   * the text of a live message of the conversation; each side served by its trigram index.
   */
  private matchingTerm(q: Knex.QueryBuilder, term: string, organizationId: number) {
    const pattern = containsPattern(term)
    // The number's digits after any leading zeros (a trunk 0 or the 00 international prefix), found in E.164 forms.
    const digits = term.replace(/\D/g, '').replace(/^0+/, '')
    const contacts = this.knex('contacts').select('id')
      .where('organization_id', organizationId)
      .whereNull('deleted_at')
      .where((c) => {
        c.whereRaw('search_name LIKE search_fold(?)', [pattern]).orWhereRaw('lower(email) LIKE ?', [pattern])
        if (digits.length >= 2) c.orWhere('phone_e164', 'like', containsPattern(digits))
      })
    const messages = this.knex('conversation_messages').select('conversation_id')
      .where('organization_id', organizationId)
      .whereNull('deleted_at')
      .whereRaw('lower(content) LIKE ?', [pattern])
    q.whereIn('conversations.contact_id', contacts).orWhereIn('conversations.id', messages)
  }
}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'conversations',
  softDeleteCascade: [
    { table: 'conversation_messages', column: 'conversation_id', path: 'conversation-messages-{channel}' },
    { table: 'conversation_files', column: 'conversation_id', path: 'conversation-files' }
  ]
})
