import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { carriesPerson, contactNotFound, findPerson } from './person.js'
import type { Person } from './person.js'

/** The document's name and version: a change that is not an addition gets a new version. */
export const EXPORT_FORMAT = 'crm-personal-data'
export const EXPORT_VERSION = 1

/** Rows read per statement: memory stays flat however much the person has. */
const PAGE = 500
/** How long the file links of an export work. */
const FILE_LINK_TTL_S = 24 * 60 * 60

/** The contact columns that are the person's identities on the channels (docs/channels.md). */
const IDENTITY_FIELDS = ['external_id', 'channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_messenger_user_id', 'channel_instagram_user_id', 'phone', 'email']

type Row = Record<string, any>
type Where = (query: Knex.QueryBuilder) => Knex.QueryBuilder

/**
 * Everything the organization holds about the contact's person, as one JSON document in
 * chunks (docs/privacy.md): read page by page, so that memory stays flat however much the
 * person has. 404 for an id that is not a contact of the organization, before the first chunk.
 * Each section is read when it is written: a change made meanwhile may show in a later section only.
 */
export async function exportPersonalData(app: Application, organizationId: number, contactId: number): Promise<AsyncIterable<string>> {
  const person = await findPerson(app.get('knex'), organizationId, contactId)
  if (!person) throw contactNotFound(contactId)
  return documentOf(app, person)
}

async function* documentOf(app: Application, person: Person): AsyncIterable<string> {
  const db = app.get('knex')
  const contacts = await rendered(app, 'contacts', person.contacts)
  const head = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exported_at: new Date().toISOString(),
    organization_id: person.organizationId,
    contact: contacts.find((contact) => contact.id === person.contactId),
    merged_contacts: contacts.filter((contact) => contact.id !== person.contactId),
    channel_identities: identitiesOf(person)
  }
  yield JSON.stringify(head).slice(0, -1)
  const ofPerson: Where = (query) => query.whereIn('contact_id', person.contactIds)
  yield* section('deals', pages(db, 'deals', person, ofPerson), (rows) => rendered(app, 'deals', rows))
  yield* section('activities', pages(db, 'activities', person, ofPerson), (rows) => rendered(app, 'activities', rows))
  yield* section('reservations', pages(db, 'reservations', person, ofPerson), (rows) => rendered(app, 'reservations', rows))
  yield* conversations(app, db, person)
  yield* section('webchat_sessions', pages(db, 'webchat_sessions', person, ofPerson), async (rows) => rows.map(sessionOf))
  const payload = carriesPerson('payload', person)
  yield* section('webhook_deliveries', pages(db, 'webhook_deliveries', person, (query) => query.whereRaw(payload.sql, payload.bindings)),
    (rows) => rendered(app, 'webhook-deliveries', rows))
  yield '}'
}

/** `,"name":[...]`: the records of every page, as `render` writes them. */
async function* section(name: string, rows: AsyncIterable<Row[]>, render: (rows: Row[]) => Promise<unknown[]>): AsyncIterable<string> {
  yield `,${JSON.stringify(name)}:[`
  let first = true
  for await (const page of rows) {
    const records = await render(page)
    if (records.length === 0) continue
    yield `${first ? '' : ','}${records.map((record) => JSON.stringify(record)).join(',')}`
    first = false
  }
  yield ']'
}

/** The rows of one organization's table matching `where`, deleted ones too, in pages by id. */
async function* pages(db: Knex, table: string, person: Person, where: Where): AsyncIterable<Row[]> {
  let after = 0
  for (;;) {
    const rows: Row[] = await where(db(table).where('organization_id', person.organizationId).where('id', '>', after)).orderBy('id').limit(PAGE)
    if (rows.length > 0) yield rows
    if (rows.length < PAGE) return
    after = rows[rows.length - 1].id
  }
}

/** Each conversation as GET /conversations/:id sends it, with every message and file in it. */
async function* conversations(app: Application, db: Knex, person: Person): AsyncIterable<string> {
  yield ',"conversations":['
  let first = true
  for await (const page of pages(db, 'conversations', person, (query) => query.whereIn('id', person.conversationIds))) {
    for (const conversation of await rendered(app, 'conversations', page)) {
      yield `${first ? '' : ','}${JSON.stringify(conversation).slice(0, -1)}`
      first = false
      const inConversation: Where = (query) => query.where('conversation_id', conversation.id)
      yield* section('messages', pages(db, 'conversation_messages', person, inConversation), (rows) => renderedMessages(app, rows))
      yield* section('files', pages(db, 'conversation_files', person, inConversation), (rows) => withLinks(app, rows))
      yield '}'
    }
  }
  yield ']'
}

/** Rows as the API sends their records (the service's read model), deleted ones with their deleted_at. */
const rendered = (app: Application, path: string, rows: Row[]): Promise<Row[]> => (app.service(path as any) as any).rendered(rows)

/** Messages as their channel's service sends them. */
async function renderedMessages(app: Application, rows: Row[]): Promise<Row[]> {
  const channels = [...new Set(rows.map((row) => row.channel as string))]
  const byId = new Map<number, Row>()
  for (const channel of channels) {
    for (const record of await rendered(app, `conversation-messages-${channel}`, rows.filter((row) => row.channel === channel))) byId.set(record.id, record)
  }
  return rows.map((row) => byId.get(row.id)!)
}

/** Files with a link that downloads them for a day (a signed URL on S3). */
async function withLinks(app: Application, rows: Row[]): Promise<Row[]> {
  const storage = app.get('storage')
  const expiresAt = new Date(Date.now() + FILE_LINK_TTL_S * 1000)
  const records = await rendered(app, 'conversation-files', rows)
  return Promise.all(records.map(async (record) => ({
    ...record,
    download_url: await storage.signDownload(record.storage_key, expiresAt),
    download_url_expires_at: expiresAt.toISOString()
  })))
}

/** A web-chat session without its token's hash. */
const sessionOf = (row: Row) => ({
  id: row.id,
  organization_id: row.organization_id,
  channel_account_id: row.channel_account_id,
  contact_id: row.contact_id,
  conversation_id: row.conversation_id,
  created_at: row.created_at,
  last_seen_at: row.last_seen_at,
  ended_at: row.ended_at
})

/** The identities the person is known by on the channels, per contact. */
function identitiesOf(person: Person) {
  return person.contacts.flatMap((contact) => IDENTITY_FIELDS.filter((field) => contact[field]).map((field) => ({ contact_id: contact.id, field, value: contact[field] })))
}
