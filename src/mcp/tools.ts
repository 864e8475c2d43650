import { Type } from '@feathersjs/typebox'
import type { Params } from '@feathersjs/feathers'
import { RecordId } from '../schemas.js'
import { fieldError } from '../hooks/errors.js'
import { ASSISTANT_TOOLS, withoutId } from '../services/reservations/ai-assistant-tools/tools.js'
import type { AssistantTool } from '../services/reservations/ai-assistant-tools/tools.js'
import { activityDataSchema } from '../services/crm/activities/activities.schema.js'
import { contactDataSchema, contactSearchSchema } from '../services/crm/contacts/contacts.schema.js'
import { dealQuerySchema } from '../services/crm/deals/deals.schema.js'
import { messageSendSchema } from '../services/inbox/conversation-messages/conversation-messages.schema.js'
import { sendPathOf } from '../services/inbox/conversation-messages/conversation-messages.shared.js'
import { CsvAnswer } from '../engine/csv-export.js'
import { wholeText } from '../rest.js'

/** The most rows export_list_csv answers: an assistant reads the text whole; a larger export is a GET with Accept: text/csv. */
export const MCP_CSV_MAX_ROWS = 1000
const EXPORTED_LISTS = ['contacts', 'companies', 'deals', 'activities', 'products'] as const

/** The list call of the tool itself (not a call its hooks make) answers CSV. */
const csvOfCall = (path: string) => {
  let owner: object | undefined
  return { owns: (context: object) => (context as { path?: string; method?: string }).path === path && (context as { method?: string }).method === 'find' && (owner ??= context) === context }
}

/**
 * A follow-up call a tool makes within the same tool call: already authenticated and already
 * counted against the rate limit (the first call of the tool counted it).
 */
const onBehalf = (params: Params): Params => ({ ...params, authenticated: true, authenticatedBeforeBody: false })

const { organization_id: _organization, conversation_id: _conversation, ...sendFields } = messageSendSchema.properties

// A model asked to find "Ada" names no field: searchIn is optional here and means a name search.
const { searchIn, ...searchFields } = contactSearchSchema.properties
const searchContactsArguments = Type.Object(
  { ...searchFields, searchIn: Type.Optional(Type.Unsafe({ ...searchIn, default: 'name', description: "where to look: 'name' (the default), 'email' or 'phone'" })) },
  { additionalProperties: false }
)

/** The CRM tools of the MCP server, beside the reservation tools of AI assistants (same shape, same rules). */
export const CRM_TOOLS: Record<string, AssistantTool> = {
  search_contacts: {
    description: "Search contacts by name, e-mail or phone (searchIn: 'name', the default, 'email' or 'phone'; phone needs phone_country_code and phone_country_iso).",
    endpoint: 'POST /contacts (X-Service-Method: search)',
    arguments: searchContactsArguments,
    run: (app, args, params) => app.service('contacts').search({ searchIn: 'name', ...args } as any, params)
  },
  get_contact: {
    description: 'One contact by id.',
    endpoint: 'GET /contacts/:id',
    arguments: Type.Object({ id: RecordId }, { additionalProperties: false }),
    run: (app, { id }, params) => app.service('contacts').get(id, params)
  },
  create_contact: {
    description: 'Create a contact (first_name is required; custom field values go in custom_fields_by_name).',
    endpoint: 'POST /contacts',
    arguments: withoutId(contactDataSchema),
    run: (app, args, params) => app.service('contacts').create(args as any, params)
  },
  find_deals: {
    description: 'List deals (filters: pipeline_id, pipeline_stage_id, status, contact_id, company_id, owned_by_user_id, value {$gte, $lte}, $sort, $limit).',
    endpoint: 'GET /deals',
    arguments: withoutId(dealQuerySchema),
    run: (app, args, params) => app.service('deals').find({ ...params, query: args })
  },
  create_activity: {
    description: 'Create an activity (a call, meeting, task, ...) linked to a contact, company or deal.',
    endpoint: 'POST /activities',
    arguments: withoutId(activityDataSchema),
    run: (app, args, params) => app.service('activities').create(args as any, params)
  },
  export_contact_personal_data: {
    description: "Everything the organization holds about a contact's person, as one JSON document (docs/privacy.md): the contact, deals, activities, reservations, conversations with their messages and file links, web-chat sessions, webhook deliveries. Owners and admins.",
    endpoint: 'POST /contacts/:id (X-Service-Method: export-personal-data)',
    arguments: Type.Object({ id: RecordId }, { additionalProperties: false }),
    run: (app, { id }, params) => app.service('contacts')['export-personal-data']({ id } as any, params)
  },
  erase_contact_personal_data: {
    description: "Erases a contact's person everywhere, for good (irreversible; docs/privacy.md): confirm must repeat the id. Owners and admins. Offered only where MCP_ALLOW_ERASE is set.",
    endpoint: 'POST /contacts/:id (X-Service-Method: erase-personal-data)',
    arguments: Type.Object({ id: RecordId, confirm: RecordId }, { additionalProperties: false }),
    run: (app, args, params) => app.service('contacts')['erase-personal-data'](args as any, params)
  },
  export_list_csv: {
    description: `A filtered list as CSV text (at most ${MCP_CSV_MAX_ROWS} rows), as GET /<resource> with Accept: text/csv answers it: a header row, custom fields one column each by name, related records by name (company_name, owner_name). ` +
      'query takes the list\'s filters, $sort and $select, e.g. {"email": {"$ilike": "%@acme.com"}, "$sort": {"last_name": 1}}.',
    endpoint: 'GET /<resource> (Accept: text/csv)',
    arguments: Type.Object({
      resource: Type.Unsafe<(typeof EXPORTED_LISTS)[number]>({ type: 'string', enum: [...EXPORTED_LISTS] }),
      query: Type.Optional(Type.Record(Type.String(), Type.Any(), { description: "the list's filters, $sort, $select and $limit" }))
    }, { additionalProperties: false }),
    run: async (app, { resource, query }, params) => {
      const answer = await (app.service(resource) as any).find({ ...params, query: query ?? {}, csv: csvOfCall(resource), csvMaxRows: MCP_CSV_MAX_ROWS })
      return answer instanceof CsvAnswer ? wholeText(answer.chunks) : answer
    }
  },
  get_import: {
    description: 'A CSV import: its status (previewed, queued, running, completed, failed, cancelled), its preview (rows to create, to update, invalid, the first errors) and its progress (rows read, created, updated, failed).',
    endpoint: 'GET /imports/:id',
    arguments: Type.Object({ id: RecordId }, { additionalProperties: false }),
    run: (app, { id }, params) => app.service('imports').get(id, params)
  },
  send_conversation_message: {
    description: "Send a message in a conversation, on the conversation's own channel (direction 'note' adds an internal note instead).",
    endpoint: 'POST /conversation-messages-transform-outgoing-{channel} (or /conversation-messages-{channel} for sms and playground)',
    arguments: Type.Object({ conversation_id: RecordId, ...sendFields }, { additionalProperties: false }),
    run: async (app, args, params) => {
      const conversation = await app.service('conversations').get(args.conversation_id, { ...params }).catch((error: any) => {
        if (error?.code === 404) throw fieldError('conversation_id', 'must be a conversation of this organization')
        throw error
      })
      return (app.service(sendPathOf(conversation.channel) as any) as any).create(args, onBehalf(params))
    }
  }
}

/** Tools that destroy data for good: offered only where the server's settings allow them (MCP_ALLOW_ERASE). */
export const ERASING_TOOLS = new Set(['erase_contact_personal_data'])

/** Every tool the MCP server offers: the assistant reservation tools, then the CRM tools. */
export const MCP_TOOLS: Record<string, AssistantTool> = { ...ASSISTANT_TOOLS, ...CRM_TOOLS }
