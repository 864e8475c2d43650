import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import { ISO_MS } from '../conversations/fixtures.js'
import { fakeGraph } from '../channels/fakes.js'
import type { FakeProvider } from '../channels/fakes.js'
import { startReceiver } from '../webhooks/receiver.js'
import type { Receiver } from '../webhooks/receiver.js'
import { needlesOf, scanDatabase, seedPerson, settlePurges } from './fixtures.js'
import type { SeededPerson } from './fixtures.js'

const EXPORT = { 'X-Service-Method': 'export-personal-data' }
const ERASE = { 'X-Service-Method': 'erase-personal-data' }

describe('personal data of a contact: export and erasure', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let receiver: Receiver
  let graph: FakeProvider
  let acme: Tenant
  let globex: Tenant
  let person: SeededPerson

  beforeAll(async () => {
    receiver = await startReceiver()
    graph = await fakeGraph()
    t = await startApp({ webhookAllowPrivate: true, publicRateLimitPoints: 1000, metaGraphUrl: `${graph.url}/v21.0` })
    sockets = await serveSockets(t)
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    const subscription = await t.http().post('/webhook-subscriptions').set(acme.key).send({ url: receiver.url(), events: ['*'] })
    expect(subscription.status).toBe(201)
    person = await seedPerson(t, acme, graph)
  })
  afterAll(async () => {
    await sockets.close()
    await t.close()
    await receiver.close()
    await graph.stop()
  })

  const exportOf = (id: number, headers = acme.key) => t.http().post(`/contacts/${id}`).set(headers).set(EXPORT).send({})
  const erase = (id: number, body: Record<string, unknown> = { confirm: id }, headers = acme.key) => t.http().post(`/contacts/${id}`).set(headers).set(ERASE).send(body)

  it('when an owner exports a contact, then one versioned JSON document holds the contact with its custom values, the merged duplicate, the deal, activities, reservation, both conversations with every message and a link to every file, the web-chat session, the channel identities and the webhook deliveries carrying them', async () => {
    const res = await exportOf(person.contact.id)
    expect(res.status, res.text).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const document = JSON.parse(res.text)
    expect(document).toMatchObject({ format: 'crm-personal-data', version: 1, exported_at: expect.stringMatching(ISO_MS), organization_id: acme.organization.id })
    expect(document.contact).toEqual((await t.http().get(`/contacts/${person.contact.id}`).set(acme.key)).body)
    expect(Object.values(document.contact.custom_fields_by_name)).toEqual(['teal'])
    expect(document.merged_contacts).toEqual([expect.objectContaining({ id: person.duplicate.id, email: person.strings.email, deleted_at: expect.stringMatching(ISO_MS) })])
    expect(document.channel_identities).toEqual(expect.arrayContaining([
      { contact_id: person.contact.id, field: 'channel_whatsapp_wa_id', value: person.strings.phone.replace(/\D/g, '') },
      { contact_id: person.contact.id, field: 'email', value: person.strings.email }
    ]))
    expect(document.deals.map((deal: any) => deal.id)).toEqual([person.deal.id])
    expect(document.activities.map((activity: any) => activity.id)).toEqual([person.ownActivity.id, person.sharedActivity.id])
    expect(document.reservations).toEqual([expect.objectContaining({ id: person.reservation.id, notes: `Bring ${person.strings.email}` })])
    const conversations = new Map(document.conversations.map((conversation: any) => [conversation.id, conversation]))
    expect([...conversations.keys()].sort()).toEqual([person.whatsapp.id, person.webchat.id].sort())
    const texts = document.conversations.flatMap((conversation: any) => conversation.messages.map((message: any) => message.content))
    for (const text of person.strings.messages) expect(texts).toContain(text)
    const files = document.conversations.flatMap((conversation: any) => conversation.files)
    expect(files.map((file: any) => file.id).sort()).toEqual(person.files.map((file) => file.id).sort())
    for (const file of files) {
      expect(file.download_url_expires_at).toMatch(ISO_MS)
      expect((await t.http().get(new URL(file.download_url).pathname)).status).toBe(200)
    }
    expect(document.webchat_sessions).toEqual([expect.objectContaining({ contact_id: person.duplicate.id, conversation_id: person.webchat.id })])
    expect(document.webchat_sessions[0]).not.toHaveProperty('token_hash')
    const types = new Set(document.webhook_deliveries.map((delivery: any) => delivery.type))
    for (const type of ['contacts.created', 'deals.created', 'activities.created', 'reservations.created', 'conversation-messages.created']) expect(types).toContain(type)
    expect(document.webhook_deliveries.every((delivery: any) => JSON.stringify(delivery.payload).length > 0)).toBe(true)
  })

  it('when an export is sent with an Idempotency-Key, then it is streamed and never kept: a repeat exports again, and no stored answer holds it', async () => {
    const key = `export-${person.contact.id}-${Date.now()}`
    const first = await t.http().post(`/contacts/${person.contact.id}`).set(acme.key).set(EXPORT).set('Idempotency-Key', key).send({})
    const again = await t.http().post(`/contacts/${person.contact.id}`).set(acme.key).set(EXPORT).set('Idempotency-Key', key).send({})
    expect([first.status, again.status]).toEqual([200, 200])
    expect(again.headers['idempotent-replayed']).toBeUndefined()
    expect(JSON.parse(again.text).contact.id).toBe(person.contact.id)
    expect(await t.db('idempotency_keys').where({ key })).toEqual([])
  })

  it('when the OpenAPI document is read, then it describes both methods on /contacts/{id}, their bodies, the export document and the audit record', async () => {
    const document = (await t.http().get('/openapi.json')).body
    const exported = document.paths['/contacts/{id}#export-personal-data'].post
    const erased = document.paths['/contacts/{id}#erase-personal-data'].post
    expect(exported.responses[200].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/PersonalDataExport' })
    expect(erased.responses[200].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/PersonalDataErasure' })
    expect(document.components.schemas.PersonalDataErasureRequest.required).toEqual(['confirm'])
    expect(Object.keys(document.components.schemas.PersonalDataExport.properties)).toEqual(expect.arrayContaining(['format', 'version', 'contact', 'conversations', 'webhook_deliveries']))
    expect(document.paths['/personal-data-erasures/{id}'].get).toBeDefined()
  })

  it('when a member asks for an export or an erasure, or an owner names another organization\'s contact, or the confirmation is missing or another id, then 403, 404 and 400, and nothing is erased', async () => {
    const member = await addMember(t, acme, 'member')
    const memberKey = await keyFor(t, acme, member.user.id)
    expect((await exportOf(person.contact.id, memberKey)).status).toBe(403)
    expect((await erase(person.contact.id, { confirm: person.contact.id }, memberKey)).status).toBe(403)
    expect((await exportOf(person.contact.id, globex.key)).status).toBe(404)
    expect((await erase(person.contact.id, { confirm: person.contact.id }, globex.key)).status).toBe(404)
    const unconfirmed = await erase(person.contact.id, {})
    expect(unconfirmed.status).toBe(400)
    expect(unconfirmed.body.errors).toHaveProperty('confirm')
    const wrong = await erase(person.contact.id, { confirm: person.contact.id + 1000 })
    expect(wrong.status).toBe(400)
    expect(wrong.body.errors.confirm).toMatch(/cannot be undone/)
    expect((await t.http().post(`/contacts/${person.contact.id}`).set(acme.bearer).set(ERASE).send({ confirm: person.contact.id, organization_id: globex.organization.id })).status).toBe(403)
    expect((await t.http().get(`/contacts/${person.contact.id}`).set(acme.key)).status).toBe(200)
  })

  it('when an owner erases the contact, then the answer is the audit record with what went, shared records stay unlinked and without the words naming the person, contacts.erased reaches webhooks and sockets with the id only, a stored answer is no longer replayed and a repeat answers the same record', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    receiver.reset()
    const res = await erase(person.contact.id)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toEqual({
      id: expect.any(Number), organization_id: acme.organization.id, contact_id: person.contact.id, erased_by_user_id: acme.user.id,
      api_key_id: expect.any(Number), erased_at: expect.stringMatching(ISO_MS),
      removed: expect.objectContaining({ contacts: 2, conversations: 2, conversation_files: 2, webchat_sessions: 1, reservations: 1, activities: 1, idempotent_answers: 1 }),
      unlinked: { deals: 1, activities: 1 },
      cancelled: { upcoming_reservations: 1, undelivered_messages: 1 }
    })
    expect(res.body.removed.conversation_messages).toBeGreaterThanOrEqual(4)
    expect(res.body.removed.webhook_deliveries).toBeGreaterThan(5)
    expect(res.body.removed.inbound_webhooks).toBe(1)
    expect((await t.http().get(`/personal-data-erasures/${res.body.id}`).set(acme.key)).body).toEqual(res.body)

    for (const path of [`/contacts/${person.contact.id}`, `/conversations/${person.whatsapp.id}`, `/activities/${person.ownActivity.id}`, `/reservations/${person.reservation.id}`]) {
      expect((await t.http().get(path).set(acme.key)).status, path).toBe(404)
    }
    const deal = (await t.http().get(`/deals/${person.deal.id}`).set(acme.key)).body
    expect(deal).toMatchObject({ contact_id: null, contact: null, name: 'Renewal for [erased] [erased]' })
    const shared = (await t.http().get(`/activities/${person.sharedActivity.id}`).set(acme.key)).body
    expect(shared).toMatchObject({ contact_id: null, subject: 'Demo with [erased] [erased] and the team' })
    const replay = await t.http().patch(`/contacts/${person.contact.id}`).set(acme.key).set('Idempotency-Key', person.idempotencyKey).send({ last_name: person.strings.lastName })
    expect(replay.status).toBe(409)
    expect(replay.body.errors.idempotency_key).toMatch(/erased/)

    await settlePurges(t, acme.organization.id)
    const erasedEvents = async () => {
      await t.app.get('outbox').deliverDue()
      return receiver.received.map((request) => JSON.parse(request.body)).filter((event) => event.type === 'contacts.erased').map((event) => event.data)
    }
    await expect.poll(erasedEvents).toEqual([
      { object: { id: person.contact.id, organization_id: acme.organization.id } },
      { object: { id: person.duplicate.id, organization_id: acme.organization.id } }
    ].sort((a, b) => a.object.id - b.object.id))
    await expect.poll(() => listener.received.filter((event) => event.event === 'contacts erased').map((event) => event.data))
      .toEqual(expect.arrayContaining([{ id: person.contact.id, organization_id: acme.organization.id }]))
    for (const file of person.files) expect((await t.http().get(new URL(file.url).pathname)).status).toBe(404)

    const again = await erase(person.contact.id)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(res.body)
    expect((await erase(2_000_000_000)).status).toBe(404)
  })

  it('when the erasure has run, then no text or JSON column of any table of the database, and no outbox job body, holds the person\'s names, e-mail, phone or what they wrote', async () => {
    expect(await scanDatabase(t.db, needlesOf(person.strings))).toEqual([])
    const inbound = await t.db('outbox_jobs').where({ organization_id: acme.organization.id, topic: 'channel-inbound' }).pluck('payload')
    const bodies = inbound.map((payload: any) => Buffer.from(payload.body, 'base64').toString('utf8'))
    for (const needle of needlesOf(person.strings)) expect(bodies.filter((body) => body.includes(needle))).toEqual([])
  })
})
