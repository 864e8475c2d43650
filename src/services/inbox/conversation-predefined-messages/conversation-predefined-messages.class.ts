import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { containsPattern } from '../../../engine/search.js'
import type {
  PredefinedMessage, PredefinedMessageData, PredefinedMessagePatch, PredefinedMessageQuery
} from './conversation-predefined-messages.schema.js'

export type { PredefinedMessage, PredefinedMessageData, PredefinedMessagePatch, PredefinedMessageQuery }
export type PredefinedMessageParams = KnexAdapterParams<PredefinedMessageQuery>

/** Saved replies of an organization's team, offered per channel. */
export class PredefinedMessageService extends RecordService<PredefinedMessage, PredefinedMessageData, PredefinedMessageParams, PredefinedMessagePatch> {
  /** title: a partial match (trigram index); channel: offered on that channel. */
  async find(params: PredefinedMessageParams = {}): Promise<any> {
    const { title, channel, ...query } = (params.query ?? {}) as Record<string, any>
    const scoped = { ...params, query } as PredefinedMessageParams
    if (title === undefined && channel === undefined) return super.find(scoped)
    const builder = this.createQuery(scoped)
    if (title !== undefined) builder.whereRaw('lower(conversation_predefined_messages.title) LIKE ?', [containsPattern(title)])
    if (channel !== undefined) builder.whereRaw('conversation_predefined_messages.channels @> ARRAY[?]::text[]', [channel])
    return super.find({ ...scoped, knex: builder })
  }
}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'conversation_predefined_messages'
})
