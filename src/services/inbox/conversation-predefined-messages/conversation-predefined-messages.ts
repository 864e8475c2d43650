import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { PredefinedMessageService, getOptions } from './conversation-predefined-messages.class.js'
import {
  predefinedMessageDataResolver, predefinedMessageDataSchema, predefinedMessageDataValidator, predefinedMessagePatchSchema,
  predefinedMessagePatchValidator, predefinedMessageQuerySchema, predefinedMessageQueryValidator, predefinedMessageSchema
} from './conversation-predefined-messages.schema.js'
import { predefinedMessageMethods, predefinedMessagePath } from './conversation-predefined-messages.shared.js'

export * from './conversation-predefined-messages.class.js'
export * from './conversation-predefined-messages.schema.js'

export const predefinedMessage = (app: Application) =>
  tenantResource(app, {
    path: predefinedMessagePath,
    service: new PredefinedMessageService(getOptions(app)),
    methods: predefinedMessageMethods,
    description: 'Saved replies of the inbox, with placeholders filled when sent (predefined_message_id); a live shortcut is unique in the organization (409 otherwise). $limit at most 50.',
    schemas: { result: predefinedMessageSchema, data: predefinedMessageDataSchema, patch: predefinedMessagePatchSchema, query: predefinedMessageQuerySchema },
    validators: { query: predefinedMessageQueryValidator, data: predefinedMessageDataValidator, patch: predefinedMessagePatchValidator },
    resolvers: { data: predefinedMessageDataResolver }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [predefinedMessagePath]: PredefinedMessageService
  }
}
