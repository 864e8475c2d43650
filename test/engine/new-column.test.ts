import crypto from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import request from 'supertest'
import { Type } from '@feathersjs/typebox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { MEMORY_DATABASE, migrate } from '../../src/db.js'
import type { Application } from '../../src/declarations.js'
import { contactSchema } from '../../src/services/crm/contacts/contacts.schema.js'
import { createTenant } from '../helpers/fixtures.js'
import type { TestApp } from '../helpers/app.js'
import { startReceiver } from '../webhooks/receiver.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Receiver } from '../webhooks/receiver.js'

/**
 * A resource is a declaration: a column added by a migration and named in the resource's schema
 * appears in lists, reads by id, write answers, webhook events and the OpenAPI document, with no
 * other edit. Here the migration is an ALTER TABLE before start-up, and the schema edit is made on
 * the imported schema before the app is built from it.
 */
describe('a new column of contacts', () => {
  let app: Application
  let t: TestApp
  let receiver: Receiver

  beforeAll(async () => {
    ;(contactSchema.properties as Record<string, unknown>).nickname = Type.Union([Type.String(), Type.Null()])
    app = await createApp({
      databaseUrl: MEMORY_DATABASE,
      dataDir: path.join(os.tmpdir(), `crm-test-${crypto.randomUUID()}`),
      webhookAllowPrivate: true
    })
    const db = app.get('knex')
    await migrate(db)
    await db.raw('ALTER TABLE contacts ADD COLUMN nickname text')
    await app.setup()
    const callback = app.callback()
    t = { app, db, http: () => request.agent(callback), close: async () => { await app.teardown() } }
    receiver = await startReceiver()
  }, 120_000)

  afterAll(async () => {
    await receiver?.close()
    await t?.close()
    delete (contactSchema.properties as Record<string, unknown>).nickname
  })

  it('when a contact has a value in it, then lists, reads by id, searches, write and batch answers, socket events, MCP tools, webhook payloads and the OpenAPI document show it', async () => {
    const tenant = await createTenant(t, 'Columns')
    await t.http().post('/webhook-subscriptions').set(tenant.bearer).send({ organization_id: tenant.organization.id, url: receiver.url(), events: ['contacts.updated'] }).expect(201)
    const sockets = await serveSockets(t)
    const listener = await sockets.listen({ apiKey: tenant.apiKey })
    const contact = (await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Ada' }).expect(201)).body
    expect(contact).toHaveProperty('nickname', null)
    await t.db('contacts').where({ id: contact.id }).update({ nickname: 'Countess' })
    await t.db('contacts').where({ organization_id: tenant.organization.id }).update({ nickname: 'Countess' })

    const batch = await t.http().post('/contacts').set(tenant.key).send([{ first_name: 'Grace' }]).expect(201)
    expect(batch.body[0]).toHaveProperty('nickname', null)
    const upserted = await t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'upsert')
      .send({ idProperty: 'external_id', records: [{ first_name: 'Ada', external_id: 'ada-1' }] }).expect(201)
    expect(upserted.body.data[0]).toHaveProperty('nickname', null)
    const found = await t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'search').send({ searchIn: 'name', searchTerm: 'ada' }).expect(200)
    expect(found.body.data.find((row: { id: number }) => row.id === contact.id)).toMatchObject({ nickname: 'Countess' })
    const mcp = await fetch(`${sockets.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': tenant.apiKey },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_contact', arguments: { id: contact.id } } })
    })
    expect(JSON.parse(mcpResult(await mcp.text()).result.content[0].text)).toMatchObject({ id: contact.id, nickname: 'Countess' })

    const listed = await t.http().get('/contacts').set(tenant.key).expect(200)
    expect(listed.body.data[0]).toMatchObject({ id: contact.id, nickname: 'Countess' })
    const read = await t.http().get(`/contacts/${contact.id}`).set(tenant.key).expect(200)
    expect(read.body.nickname).toBe('Countess')
    const patched = await t.http().patch(`/contacts/${contact.id}`).set(tenant.key).send({ last_name: 'Lovelace' }).expect(200)
    expect(patched.body.nickname).toBe('Countess')
    for (let tries = 0; !listener.received.some(({ event }) => event === 'contacts patched') && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(listener.received.find(({ event }) => event === 'contacts patched')?.data).toMatchObject({ id: contact.id, nickname: 'Countess' })
    expect(listener.received.find(({ event }) => event === 'contacts created')?.data).toHaveProperty('nickname')
    await sockets.close()

    for (let tries = 0; receiver.received.length === 0 && tries < 100; tries++) {
      await t.app.get('outbox').deliverDue()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const event = JSON.parse(receiver.received.at(-1)!.body)
    expect(event).toMatchObject({ type: 'contacts.updated', data: { object: { id: contact.id, nickname: 'Countess' } } })

    const document = (await t.http().get('/openapi.json').expect(200)).body
    expect(document.components.schemas.Contact.properties).toHaveProperty('nickname')
  })
})

/** The JSON-RPC answer of an MCP call, sent as JSON or as one server-sent event. */
function mcpResult(text: string) {
  const data = text.split('\n').find((line) => line.startsWith('data: '))
  return JSON.parse(data ? data.slice('data: '.length) : text)
}
