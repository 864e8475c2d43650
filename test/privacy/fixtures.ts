import crypto from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { created } from '../conversations/fixtures.js'
import { png } from '../storage/fixtures.js'
import { META_SECRET, connectWebchat, connectWhatsApp, pathOf, uniqueDigits } from '../channels/fixtures.js'
import { metaSignature, settle } from '../channels/fakes.js'
import type { FakeProvider } from '../channels/fakes.js'
import { metaJson, whatsappText } from '../channels/payloads.js'
import { at, inDays, link, resourceWithHours } from '../reservations/fixtures.js'

/** Strings no other test writes: found anywhere after an erasure, they are the person's. */
export interface PersonStrings {
  firstName: string
  lastName: string
  email: string
  phone: string
  /** What the person wrote on WhatsApp and in the web chat. */
  messages: string[]
}

export interface SeededPerson {
  strings: PersonStrings
  contact: Record<string, any>
  /** The visitor's contact, merged into the person's. */
  duplicate: Record<string, any>
  deal: Record<string, any>
  /** An activity about the person alone, and one that also belongs to the deal. */
  ownActivity: Record<string, any>
  sharedActivity: Record<string, any>
  reservation: Record<string, any>
  whatsapp: Record<string, any>
  webchat: Record<string, any>
  files: Record<string, any>[]
  visitorToken: string
  /** The answer stored with an Idempotency-Key. */
  idempotencyKey: string
}

const word = () => crypto.randomUUID().replace(/[^a-f]/g, '').slice(0, 6).padEnd(6, 'q')

export function personStrings(): PersonStrings {
  const tag = word()
  const digits = uniqueDigits(8)
  return {
    firstName: `Ottilie${tag}`,
    lastName: `Quibblesworth${tag}`,
    email: `ottilie.${tag}@privacy.example.test`,
    phone: `+44 75${digits}`,
    messages: [`My parcel never came, ref ${tag} on WhatsApp`, `Web chat note from me ${tag}`]
  }
}

/** Signs an upload for the tenant, PUTs the bytes, registers the file on the conversation. */
export async function attachFile(t: TestApp, tenant: Tenant, conversationId: number, seed: number) {
  const bytes = png(seed)
  const signed = created(await t.http().post('/storage-url-signing').set(tenant.key)
    .send({ type: 'conversation-file', file_name: 'receipt.png', content_type: 'image/png', file_size: bytes.length }), 'signed upload')
  const { pathname, search } = new URL(signed.upload_url)
  if (signed.upload_url.startsWith('http://localhost')) {
    expect((await t.http().put(`${pathname}${search}`).set(signed.headers).send(bytes)).status).toBe(200)
  } else {
    const put = await fetch(signed.upload_url, { method: 'PUT', headers: signed.headers, body: new Uint8Array(bytes) })
    expect(put.status).toBe(200)
  }
  return created(await t.http().post('/conversation-files').set(tenant.key)
    .send({ conversation_id: conversationId, storage_key: signed.storage_key, file_name: 'receipt.png', file_type: 'image/png', file_size: bytes.length }), 'file')
}

/**
 * A person across every kind of record: a contact with a custom value, a deal and two
 * activities naming them, a reservation to come, a WhatsApp conversation (their message, an
 * undelivered reply with a file), a web-chat session whose contact was merged into theirs (their
 * message, a reply with a file), webhook deliveries and an answer stored with an Idempotency-Key.
 * The tenant must have a webhook subscription to '*' already, so that deliveries carry them; the
 * app's Graph API is `graph`.
 */
export async function seedPerson(t: TestApp, tenant: Tenant, graph: FakeProvider, strings = personStrings()): Promise<SeededPerson> {
  const post = async (path: string, body: Record<string, unknown>) => created(await t.http().post(path).set(tenant.key).send(body), path)
  const field = await post('/custom-fields', { entity_type: 'contact', key: `colour_${word()}`, name: `Favourite colour ${word()}`, field_type: 'text' })
  const waId = strings.phone.replace(/\D/g, '')
  const contact = await post('/contacts', {
    first_name: strings.firstName, last_name: strings.lastName, email: strings.email,
    phone: strings.phone, phone_country_code: '+44', phone_country_iso: 'GB', channel_whatsapp_wa_id: waId,
    custom_fields_by_name: { [field.name]: 'teal' }
  })
  const pipeline = await post('/pipelines', { name: 'Sales', type: 'deal' })
  const stage = await post('/pipeline-stages', { pipeline_id: pipeline.id, name: 'New', position: 0 })
  const deal = await post('/deals', {
    name: `Renewal for ${strings.firstName} ${strings.lastName}`, amount: 120, currency: 'EUR', status: 'open',
    pipeline_id: pipeline.id, pipeline_stage_id: stage.id, contact_id: contact.id
  })
  const ownActivity = await post('/activities', { subject: `Call ${strings.firstName}`, note: `at ${strings.phone}`, contact_id: contact.id, activity_type: 'call' })
  const sharedActivity = await post('/activities', { subject: `Demo with ${strings.firstName} ${strings.lastName} and the team`, contact_id: contact.id, deal_id: deal.id, activity_type: 'meeting' })

  const service = await post('/reservation-services', { name: 'Fitting', duration_minutes: 60, max_advance_days: 400 })
  const resource = await resourceWithHours(t, tenant, { name: 'Room' }, [['09:00', '17:00']])
  await link(t, tenant, service.id, resource.id)
  const reservation = await post('/reservations', { service_id: service.id, contact_id: contact.id, start_datetime: at(inDays(3), '10:00'), notes: `Bring ${strings.email}` })

  const account = await connectWhatsApp(t, tenant)
  const body = metaJson(whatsappText(account.config.phone_number_id, { waId, name: `${strings.firstName} ${strings.lastName}` }, `wamid.${uniqueDigits()}`, strings.messages[0]))
  const inbound = await t.http().post(pathOf(account.webhook_url)).set('Content-Type', 'application/json').set('X-Hub-Signature-256', metaSignature(body, META_SECRET)).send(body)
  expect(inbound.status).toBe(200)
  await settle(t, tenant.organization.id)
  const whatsapp = await t.db('conversations').where({ organization_id: tenant.organization.id, contact_id: contact.id, channel: 'whatsapp' }).first()
  expect(whatsapp, 'the WhatsApp message reached the contact').toBeTruthy()
  const whatsappFile = await attachFile(t, tenant, whatsapp.id, 11)
  // Never sent: Graph answers 500 and the retry is far off, so the reply stays queued.
  graph.queue({ status: 500, body: { error: { message: 'unavailable', type: 'OAuthException', code: 2 } } })
  await post('/conversation-messages-transform-outgoing-whatsapp', { conversation_id: whatsapp.id, content: `Sorry ${strings.firstName}`, file_ids: [whatsappFile.id] })

  const widget = await connectWebchat(t, tenant)
  const session = created(await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({ name: `${strings.firstName} ${strings.lastName}`, email: strings.email }), 'web chat session')
  expect((await t.http().post('/public/webchat/messages').set('X-Visitor-Token', session.visitor_token).send({ content: strings.messages[1] })).status).toBe(201)
  const webchat = (await t.http().get(`/conversations/${session.conversation_id}`).set(tenant.key)).body
  const webchatFile = await attachFile(t, tenant, webchat.id, 12)
  await post('/conversation-messages-transform-outgoing-webchat', { conversation_id: webchat.id, content: `Here you are, ${strings.firstName}`, file_ids: [webchatFile.id] })
  const merge = await t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'merge').send({ primary_id: contact.id, duplicate_ids: [webchat.contact_id] })
  expect(merge.status, JSON.stringify(merge.body)).toBe(200)

  const idempotencyKey = `privacy-${crypto.randomUUID()}`
  const patched = await t.http().patch(`/contacts/${contact.id}`).set(tenant.key).set('Idempotency-Key', idempotencyKey).send({ last_name: strings.lastName })
  expect(patched.status).toBe(200)
  return {
    strings, contact: merge.body, duplicate: { id: webchat.contact_id }, deal, ownActivity, sharedActivity, reservation,
    whatsapp, webchat, files: [whatsappFile, webchatFile], visitorToken: session.visitor_token, idempotencyKey
  }
}

/** Where a string of the person was found: the table, the column and the row's id (if it has one). */
export interface Finding {
  table: string
  column: string
  needle: string
}

/**
 * Every base table of the schema, from the catalogue (so a table added later is scanned too):
 * each text, character, JSON and array column, searched case-insensitively in SQL for each string.
 */
export async function scanDatabase(db: TestApp['db'], needles: string[]): Promise<Finding[]> {
  const { rows: columns } = await db.raw(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
        AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb') OR c.data_type = 'ARRAY')
      ORDER BY c.table_name, c.column_name`
  )
  const findings: Finding[] = []
  const patterns = needles.map((needle) => `%${needle.replace(/[\\%_]/g, '\\$&')}%`)
  for (const { table_name: table, column_name: column } of columns) {
    // The values that hold any of them, then which: one plain scan per column (Citus runs it on
    // every shard, where a correlated subquery beside unnest() is refused).
    const { rows } = await db.raw(`SELECT DISTINCT ??::text AS value FROM ?? WHERE ??::text ILIKE ANY(?::text[])`, [column, table, column, patterns])
    for (const needle of needles) {
      if (rows.some(({ value }: { value: string }) => value.toLowerCase().includes(needle.toLowerCase()))) findings.push({ table, column, needle })
    }
  }
  return findings
}

/** The strings that are the person: their names, e-mail, phone (as written and as digits) and what they wrote. */
export const needlesOf = (strings: PersonStrings) =>
  [strings.firstName, strings.lastName, strings.email, strings.phone, strings.phone.replace(/\D/g, ''), ...strings.messages]

/**
 * Runs the outbox until the organization has no purge job waiting or running: a job that runs out
 * of time leaves the rest to the next one, and the app's own worker may take any of them.
 */
export async function settlePurges(t: TestApp, organizationId: number) {
  for (let attempt = 0; attempt < 6000; attempt++) {
    await t.app.get('outbox').deliverDue()
    const waiting = await t.db('outbox_jobs').first('id').where({ organization_id: organizationId, topic: 'purge' }).whereIn('status', ['pending', 'running'])
    if (!waiting) return
    await sleep(50)
  }
  throw new Error('the purge jobs did not settle')
}
