import type { Application, HookContext } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { isValidKey, typeOfExtension } from '../../../storage/storage.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ConversationFileService, getOptions } from './conversation-files.class.js'
import {
  conversationFileDataResolver, conversationFileDataSchema, conversationFileDataValidator, conversationFileQuerySchema,
  conversationFileQueryValidator, conversationFileSchema
} from './conversation-files.schema.js'
import { conversationFileMethods, conversationFilePath } from './conversation-files.shared.js'

export * from './conversation-files.class.js'
export * from './conversation-files.schema.js'


/**
 * The file was uploaded where POST /storage-url-signing (type conversation-file) told this
 * organization to put it, it is stored with exactly the size given, and its type is the one
 * its key was signed for.
 */
const verifyStoredObject = async (context: HookContext<ConversationFileService>) => {
  const data = context.data as Record<string, any>
  const key: string = data.storage_key
  if (!key.startsWith(`${data.organization_id}/conversations/`) || !isValidKey(key)) {
    throw fieldError('storage_key', 'must be a key signed for this organization with type conversation-file')
  }
  const size = await context.app.get('storage').size(key)
  if (size === undefined) throw fieldError('storage_key', 'has no uploaded file: PUT the file to the signed upload_url first')
  if (size !== data.file_size) throw fieldError('storage_key', `holds ${size} bytes, not file_size ${data.file_size}`)
  if (data.file_type.toLowerCase() !== typeOfExtension(key)) throw fieldError('file_type', `must be ${typeOfExtension(key)}, the type the upload was signed for`)
}

export const conversationFile = (app: Application) =>
  tenantResource(app, {
    path: conversationFilePath,
    service: new ConversationFileService(getOptions(app)),
    methods: conversationFileMethods,
    description: 'Files of conversations: sign an upload with POST /storage-url-signing (type conversation-file), PUT the file, then register it here to attach it to messages (file_ids). $limit at most 50.',
    schemas: { result: conversationFileSchema, data: conversationFileDataSchema, query: conversationFileQuerySchema },
    validators: { query: conversationFileQueryValidator, data: conversationFileDataValidator },
    resolvers: { data: conversationFileDataResolver },
    references: { conversation_id: { table: 'conversations' } },
    rules: { create: [verifyStoredObject] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [conversationFilePath]: ConversationFileService
  }
}
