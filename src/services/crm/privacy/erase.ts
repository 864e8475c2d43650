import type { Params as CallParams } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { emitAfterCommit, inTransaction } from '../../../hooks/deferred-events.js'
import type { PendingEvent } from '../../../hooks/deferred-events.js'
import { CONTACT_ERASED, enqueueEvents } from '../../../webhook-events.js'
import { INBOUND_TOPIC } from '../../inbox/channels/webhooks.js'
import { ERASED_TEXT, carriesPerson, contactNotFound, findPerson, namingPattern } from './person.js'
import type { Person } from './person.js'
import { enqueueErasureFollowUp } from './follow-up.js'
import { forgetTokens } from '../../../lib/public-tokens.js'

/** What an erasure did, by kind of record: the audit record keeps the counts, never the records. */
export interface ErasureCounts {
  removed: Record<string, number>
  unlinked: Record<string, number>
  cancelled: Record<string, number>
}

/** A call's params, in the transaction it runs in when it has one. */
type Params = CallParams & { transaction?: { trx?: Knex.Transaction } }

/** The audit record as the API sends it (GET /personal-data-erasures/:id). */
export type Erasure = Record<string, any>

/** The reservations that were still to come: erasing their person cancels them (their time is free again). */
const UPCOMING = (row: Record<string, any>) => row.deleted_at === null && ['pending', 'confirmed'].includes(row.status) && new Date(row.start_datetime).getTime() > Date.now()

/**
 * Erases a contact and everything that exists only for them, in one transaction (the call's, when
 * it runs in one): see docs/privacy.md for what goes from which table. The stored files go after
 * the commit, through the outbox, as do the outbox jobs of the deleted messages and deliveries.
 * A contact erased already answers its erasure again; any other unknown id is a 404.
 */
export async function erasePersonalData(app: Application, organizationId: number, contactId: number, params: Params): Promise<Erasure> {
  if (!params.transaction?.trx) {
    return inTransaction(app.get('knex'), (inside) => erasePersonalData(app, organizationId, contactId, { ...params, ...inside }))
  }
  const trx = params.transaction.trx
  const person = await findPerson(trx, organizationId, contactId, { lock: true })
  if (!person) return earlierErasure(app, trx, organizationId, contactId)
  const counts: ErasureCounts = { removed: {}, unlinked: {}, cancelled: {} }
  const { storageKeys, messageIds } = await eraseConversations(trx, person, counts)
  await eraseReservations(trx, person, counts)
  await eraseOrUnlink(app, trx, person, counts, params)
  const deliveryIds = await eraseCopies(trx, person, counts)
  counts.removed.inbound_webhooks = await eraseInboundCopies(trx, person)
  counts.removed.contacts = await countOf(trx('contacts').where('organization_id', organizationId).whereIn('id', person.contactIds).delete())
  const [row] = await trx('personal_data_erasures').insert({
    organization_id: organizationId,
    contact_id: contactId,
    erased_by_user_id: params.caller?.userId ?? null,
    api_key_id: params.caller?.apiKeyId ?? null,
    removed: JSON.stringify(counts.removed),
    unlinked: JSON.stringify(counts.unlinked),
    cancelled: JSON.stringify(counts.cancelled)
  }).returning('*')
  await enqueueErasureFollowUp(trx, organizationId, { storage_keys: storageKeys, message_ids: messageIds, delivery_ids: deliveryIds })
  await announceErasure(app, trx, person, params)
  app.get('outbox').kickAfterCommit(trx)
  return renderedErasure(app, row, params)
}

/** The audit record of an earlier erasure of this contact, or the 404 of an id that never was one. */
async function earlierErasure(app: Application, trx: Knex.Transaction, organizationId: number, contactId: number): Promise<Erasure> {
  const row = await trx('personal_data_erasures').first().where({ organization_id: organizationId, contact_id: contactId })
  if (!row) throw contactNotFound(contactId)
  return renderedErasure(app, row, { transaction: { trx } })
}

const renderedErasure = async (app: Application, row: Record<string, any>, params: Params): Promise<Erasure> =>
  (await app.service('personal-data-erasures').rendered([row], params))[0]

const inOrganization = (db: Knex, table: string, person: Person) => db(table).where(`${table}.organization_id`, person.organizationId)

/** The rows a delete or update wrote, counted alike on every driver. */
const countOf = async (write: Knex.QueryBuilder) => ((await write.returning('id')) as unknown[]).length

/**
 * The person's conversations go whole: their messages (undelivered ones are dropped: counted as
 * cancelled), files, the provider statuses of their messages, their automation runs and web-chat
 * sessions (those of the person's contacts too). Answers the storage keys of the files and the
 * ids of the messages, for the follow-up after the commit.
 */
async function eraseConversations(trx: Knex.Transaction, person: Person, counts: ErasureCounts) {
  const conversations = person.conversationIds
  const sessions: { token_hash: string }[] = await inOrganization(trx, 'webchat_sessions', person)
    .where((q) => q.whereIn('contact_id', person.contactIds).orWhereIn('conversation_id', conversations))
    .delete().returning('token_hash')
  counts.removed.webchat_sessions = sessions.length
  await forgetTokens(trx, person.organizationId, sessions.map((session) => session.token_hash))
  await scrubVisitorAnswers(trx, sessions.map((session) => session.token_hash))
  await trx.raw(
    `DELETE FROM channel_message_statuses s USING conversation_messages m
      WHERE m.organization_id = ? AND m.conversation_id = ANY(?::int[]) AND m.provider_message_id IS NOT NULL
        AND s.organization_id = m.organization_id AND s.channel_account_id = m.channel_account_id AND s.provider_message_id = m.provider_message_id`,
    [person.organizationId, conversations]
  )
  counts.removed.automation_executions = await countOf(inOrganization(trx, 'automation_executions', person).whereIn('conversation_id', conversations).delete())
  const files: { storage_key: string }[] = await inOrganization(trx, 'conversation_files', person).whereIn('conversation_id', conversations).delete().returning('storage_key')
  const messages: { id: number; status: string; deleted_at: Date | null }[] = await inOrganization(trx, 'conversation_messages', person)
    .whereIn('conversation_id', conversations).delete().returning(['id', 'status', 'deleted_at'])
  counts.removed.conversation_files = files.length
  counts.removed.conversation_messages = messages.length
  counts.cancelled.undelivered_messages = messages.filter((message) => message.status === 'queued' && message.deleted_at === null).length
  counts.removed.conversations = await countOf(inOrganization(trx, 'conversations', person).whereIn('id', conversations).delete())
  return { storageKeys: files.map((file) => file.storage_key), messageIds: messages.map((message) => message.id) }
}

/** A web-chat visitor's stored answers (their scope is their session's token) are emptied with the sessions. */
async function scrubVisitorAnswers(trx: Knex.Transaction, tokenHashes: string[]) {
  if (tokenHashes.length === 0) return
  await trx('idempotency_keys').whereIn('scope', tokenHashes.map((hash) => `visitor:${hash}`)).whereNotNull('response_body')
    .update({ response_body: null, answer_erased_at: trx.fn.now() })
}

/** Bookings exist for their person: they go, and those still to come count as cancelled. */
async function eraseReservations(trx: Knex.Transaction, person: Person, counts: ErasureCounts) {
  const rows: Record<string, any>[] = await inOrganization(trx, 'reservations', person).whereIn('contact_id', person.contactIds)
    .delete().returning(['id', 'status', 'start_datetime', 'deleted_at'])
  counts.removed.reservations = rows.length
  counts.cancelled.upcoming_reservations = rows.filter(UPCOMING).length
}

/**
 * Activities about the person alone go. Deals, and activities that also belong to a deal or a
 * company, stay for the others: they lose the link, and their texts lose the words that named the
 * person. What stays is announced as updated (webhooks, sockets), in its new shape.
 */
async function eraseOrUnlink(app: Application, trx: Knex.Transaction, person: Person, counts: ErasureCounts, params: Params) {
  const shared = (q: Knex.QueryBuilder) => q.whereNotNull('deal_id').orWhereNotNull('company_id')
  const pattern = namingPattern(person)
  const scrub = (column: string) => (pattern ? trx.raw(`regexp_replace(??, ?, ?, 'gi')`, [column, pattern, ERASED_TEXT]) : trx.ref(column))
  const activities = await inOrganization(trx, 'activities', person).whereIn('contact_id', person.contactIds).where(shared)
    .update({ contact_id: null, subject: scrub('subject'), note: scrub('note'), public_description: scrub('public_description'), location: scrub('location'), updated_at: trx.fn.now() })
    .returning('*')
  counts.removed.activities = await countOf(inOrganization(trx, 'activities', person).whereIn('contact_id', person.contactIds).delete())
  const deals = await inOrganization(trx, 'deals', person).whereIn('contact_id', person.contactIds)
    .update({ contact_id: null, name: scrub('name'), updated_at: trx.fn.now() }).returning('*')
  counts.unlinked.activities = activities.length
  counts.unlinked.deals = deals.length
  await announceUnlinked(app, 'activities', activities, params)
  await announceUnlinked(app, 'deals', deals, params)
}

async function announceUnlinked(app: Application, path: 'activities' | 'deals', rows: Record<string, any>[], params: Params) {
  const service = app.service(path) as any
  const records: Record<string, any>[] = await service.rendered(rows, params)
  params.alsoChanged?.push(...records.map((record) => ({ path, method: 'patch' as const, record })))
  for (const record of records) emitAfterCommit(params, service, 'patched', record)
}

/**
 * The copies of the person's records the service keeps: webhook deliveries whose payload carries
 * one go (a pending one is never sent), stored Idempotency-Key answers are emptied (a repeat of
 * such a request is then a 409, never a replay). Answers the ids of the deliveries.
 */
async function eraseCopies(trx: Knex.Transaction, person: Person, counts: ErasureCounts) {
  const payload = carriesPerson('payload', person)
  const deliveries: { id: number }[] = await inOrganization(trx, 'webhook_deliveries', person)
    .whereRaw(payload.sql, payload.bindings).delete().returning('id')
  counts.removed.webhook_deliveries = deliveries.length
  const answer = carriesPerson('response_body', person)
  counts.removed.idempotent_answers = await countOf(trx('idempotency_keys')
    .where((q) => q.where('organization_id', person.organizationId).orWhereNull('organization_id'))
    .whereNotNull('response_body').whereRaw(answer.sql, answer.bindings)
    .update({ response_body: null, answer_erased_at: trx.fn.now() }))
  return deliveries.map((delivery) => delivery.id)
}

/** The channel identities of the person as a provider's webhook body writes them: ids, and the phone's E.164 digits. */
const IDENTITY_COLUMNS = ['channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_messenger_user_id', 'channel_instagram_user_id']

/**
 * The providers' webhook requests kept in the outbox (their bodies, as received, stored by the
 * worker) that carry one of the person's channel identities: processed or waiting, they go, so
 * that no copy of what the person sent stays (one being processed right now is left to finish).
 */
async function eraseInboundCopies(trx: Knex.Transaction, person: Person): Promise<number> {
  const identities = new Set<string>()
  for (const contact of person.contacts) {
    for (const column of IDENTITY_COLUMNS) if (contact[column]) identities.add(String(contact[column]))
    if (contact.phone_e164) identities.add(String(contact.phone_e164).slice(1))
  }
  if (identities.size === 0) return 0
  const patterns = [...identities].map((identity) => `%${identity.replace(/[\\%_]/g, '\\$&')}%`)
  // Found by a read, then deleted by id: Citus refuses convert_from (a stable function) over a
  // column in a DELETE's condition.
  const jobs = await trx('outbox_jobs').where({ organization_id: person.organizationId, topic: INBOUND_TOPIC }).whereNot('status', 'running')
    .whereRaw(`convert_from(decode(payload->>'body', 'base64'), 'UTF8') LIKE ANY(?::text[])`, [patterns]).forUpdate().pluck('id')
  if (jobs.length === 0) return 0
  return countOf(trx('outbox_jobs').whereIn('id', jobs).delete())
}

/**
 * contacts.erased for each of the person's contacts: with the id only, to webhook subscribers
 * (in the transaction) and sockets (after the commit), so that copies kept elsewhere go too.
 */
async function announceErasure(app: Application, trx: Knex.Transaction, person: Person, params: Params) {
  const erased = person.contactIds.map((id) => ({ id, organization_id: person.organizationId }))
  await enqueueEvents(trx, CONTACT_ERASED, erased.map((object) => ({ object })), [])
  const contacts = app.service('contacts') as unknown as PendingEvent['service']
  for (const record of erased) emitAfterCommit(params, contacts, 'erased', record)
}
