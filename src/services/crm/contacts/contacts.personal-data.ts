import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext, Role } from '../../../declarations.js'
import type { CustomMethod } from '../../../engine/tenant-resource.js'
import { fieldError } from '../../../hooks/errors.js'
import { idOfPath } from '../../../hooks/custom-method-id.js'
import { dataValidator, getValidator } from '../../../validators.js'
import { RecordId, Timestamp } from '../../../schemas.js'
import { EXPORT_FORMAT, EXPORT_VERSION } from '../privacy/export.js'
import { personalDataErasureSchema } from '../personal-data-erasures/personal-data-erasures.schema.js'
import { dealSchema } from '../deals/deals.schema.js'
import { activitySchema } from '../activities/activities.schema.js'
import { reservationSchema } from '../../reservations/reservations/reservations.schema.js'
import { conversationSchema } from '../../inbox/conversations/conversations.schema.js'
import { messageSchema } from '../../inbox/conversation-messages/conversation-messages.schema.js'
import { conversationFileSchema } from '../../inbox/conversation-files/conversation-files.schema.js'
import { webhookDeliverySchema } from '../../integrations/webhook-deliveries/webhook-deliveries.schema.js'
import { contactSchema } from './contacts.schema.js'

/**
 * The personal-data methods of a contact (docs/privacy.md): POST /contacts/:id with
 * X-Service-Method export-personal-data (GDPR articles 15 and 20) or erase-personal-data
 * (article 17), for owners and admins.
 */

declare module '@feathersjs/feathers' {
  interface Params {
    /** The answer may be streamed: the call is a REST request's own (an export's chunks go out as they are read). */
    streamsAnswer?: boolean
  }
}

const pathId = { ...RecordId, description: "the contact's id, for a call without a path (Socket.io); over REST it is in the path" }

export const personalDataExportRequestSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), id: Type.Optional(pathId) },
  { $id: 'PersonalDataExportRequest', additionalProperties: false }
)
export type PersonalDataExportRequest = Static<typeof personalDataExportRequestSchema>

export const personalDataErasureRequestSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    id: Type.Optional(pathId),
    confirm: { ...RecordId, description: "the contact's id once more: an erasure cannot be undone" }
  },
  { $id: 'PersonalDataErasureRequest', additionalProperties: false }
)
export type PersonalDataErasureRequest = Static<typeof personalDataErasureRequestSchema>

const Records = (schema: typeof dealSchema | typeof activitySchema | typeof reservationSchema, description: string) => Type.Array(schema, { description })

const ExportedFile = Type.Object({
  ...conversationFileSchema.properties,
  download_url: Type.String({ description: 'downloads the file without credentials until download_url_expires_at (a signed URL on S3)' }),
  download_url_expires_at: Timestamp
})

/** The export document, version 1: every section as the API sends its records, deleted ones included (with deleted_at). */
export const personalDataExportSchema = Type.Object(
  {
    format: Type.Literal(EXPORT_FORMAT),
    version: Type.Literal(EXPORT_VERSION, { description: 'changes only when a section or field changes meaning or goes; additions keep it' }),
    exported_at: Timestamp,
    organization_id: RecordId,
    contact: contactSchema,
    merged_contacts: Type.Array(contactSchema, { description: 'contacts a merge folded into this one (deleted since), which held the same person' }),
    channel_identities: Type.Array(Type.Object({ contact_id: RecordId, field: Type.String(), value: Type.String() }), {
      description: "what the person is known by on the channels: e-mail, phone, external_id (a web-chat user id), the WhatsApp, Messenger and Instagram ids"
    }),
    deals: Records(dealSchema, 'deals naming the person (contact_id)'),
    activities: Records(activitySchema, 'activities naming the person'),
    reservations: Records(reservationSchema, "the person's bookings"),
    conversations: Type.Array(Type.Object({
      ...conversationSchema.properties,
      messages: Type.Array(messageSchema, { description: 'every message of the conversation, oldest first' }),
      files: Type.Array(ExportedFile)
    }), { description: "the person's conversations on every channel" }),
    webchat_sessions: Type.Array(Type.Object({
      id: RecordId, organization_id: RecordId, channel_account_id: RecordId, contact_id: RecordId, conversation_id: RecordId,
      created_at: Timestamp, last_seen_at: Timestamp, ended_at: Type.Union([Timestamp, Type.Null()])
    }), { description: 'the web-chat sessions the person opened (without their tokens)' }),
    webhook_deliveries: Type.Array(webhookDeliverySchema, { description: 'events posted (or to post) to webhook subscribers whose payload carries one of these records' })
  },
  { $id: 'PersonalDataExport', additionalProperties: false }
)

/** Over REST the export is streamed as it is read; other callers (sockets, MCP) get the whole document. */
const streamToRestRequests = async (context: HookContext) => {
  context.params.streamsAnswer = Boolean(context.params.restRequest?.owns(context))
}

/** An erasure names its contact twice: in the path and in confirm. */
const requireConfirmation = async (context: HookContext) => {
  const data = context.data as PersonalDataErasureRequest
  if (data.confirm !== idOfPath(context.params, data)) throw fieldError('confirm', "must be the contact's id: an erasure cannot be undone")
}

export const PERSONAL_DATA_ROLES: Partial<Record<string, Role[]>> = { 'export-personal-data': ['owner', 'admin'], 'erase-personal-data': ['owner', 'admin'] }

export const personalDataMethods: Record<string, CustomMethod> = {
  'export-personal-data': {
    data: getValidator(personalDataExportRequestSchema, dataValidator),
    before: [streamToRestRequests],
    reads: true,
    docs: {
      byId: true,
      data: personalDataExportRequestSchema,
      result: personalDataExportSchema,
      summary: "Export everything held about a contact's person",
      description: "One JSON document (format crm-personal-data, version 1) with the contact, the contacts merged into it, their channel identities, the deals, activities and reservations naming them, " +
        'their conversations with every message and file (with download links), their web-chat sessions and the webhook deliveries carrying their data; deleted records included until the retention removes them. ' +
        'Streamed as it is read. Owners and admins; a read-only API key may export. See docs/privacy.md.'
    }
  },
  'erase-personal-data': {
    data: getValidator(personalDataErasureRequestSchema, dataValidator),
    before: [requireConfirmation],
    docs: {
      byId: true,
      data: personalDataErasureRequestSchema,
      result: personalDataErasureSchema,
      summary: "Erase a contact's person everywhere",
      description: 'Irreversible, in one transaction: the contact and the contacts merged into it, their conversations (messages, files, also from storage), web-chat sessions, reservations and the activities about them alone are deleted for good; ' +
        'deals and activities shared with others lose the link and the words naming the person; webhook deliveries and stored Idempotency-Key answers carrying them are removed. ' +
        'Upcoming reservations are cancelled and undelivered messages dropped (counted in cancelled). A contacts.erased event (id only) goes to webhooks and sockets. ' +
        'Answers the audit record (GET /personal-data-erasures/{id}); erasing an erased contact again answers the same record. Owners and admins. See docs/privacy.md.'
    }
  }
}
