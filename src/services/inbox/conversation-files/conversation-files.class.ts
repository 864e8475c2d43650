import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { ConversationFile, ConversationFileData, ConversationFileQuery } from './conversation-files.schema.js'

export type { ConversationFile, ConversationFileData, ConversationFileQuery }
export type ConversationFileParams = KnexAdapterParams<ConversationFileQuery>

/** Files uploaded for a conversation (through a signed URL), registered to be attached to messages. */
export class ConversationFileService extends RecordService<ConversationFile, ConversationFileData, ConversationFileParams> {}

export const getOptions = (app: Application) => ({
  paginate: { default: 10, max: 50 },
  Model: app.get('knex'),
  name: 'conversation_files'
})
