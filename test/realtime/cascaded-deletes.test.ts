import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import type { Listener } from '../helpers/sockets.js'
import { createBoard, createConversation, created } from '../conversations/fixtures.js'
import { png } from '../storage/fixtures.js'
import { startReceiver } from '../webhooks/receiver.js'
import type { Receiver } from '../webhooks/receiver.js'

/**
 * Deleting a record soft-deletes the records that live and die with it (a conversation's
 * messages and files, a deal's products, a pipeline's stages, a product's media): each of them
 * is a removed event on its own service and, where its resource has webhook events, a
 * <resource>.deleted delivery, as if it had been deleted on its own (docs/realtime.md).
 */

type Row = Record<string, any>
const uid = () => crypto.randomUUID().slice(0, 8)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let t: TestApp
let sockets: Awaited<ReturnType<typeof serveSockets>>
let receiver: Receiver
let acme: Tenant
let globex: Tenant

beforeAll(async () => {
  t = await startApp({ webhookAllowPrivate: true })
  sockets = await serveSockets(t)
  receiver = await startReceiver()
  acme = await createTenant(t, 'Acme')
  globex = await createTenant(t, 'Globex')
})
afterAll(async () => {
  await sockets?.close()
  await t?.close()
  await receiver?.close()
})

const post = async (tenant: Tenant, path: string, body: Row) => created(await t.http().post(path).set(tenant.key).send(body), `POST ${path}`)
const remove = async (tenant: Tenant, path: string) => {
  const res = await t.http().delete(path).set(tenant.key)
  expect(res.status, `DELETE ${path} ${JSON.stringify(res.body)}`).toBe(200)
  return res.body
}
const heard = (listener: Listener, path: string, event = 'removed') => listener.received.filter((r) => r.event === `${path} ${event}`).map((r) => r.data as Row)
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b)

/** A subscription of the organization to these event types, and a reader of its deliveries' events. */
async function subscribe(tenant: Tenant, events: string[]) {
  const subscription = await post(tenant, '/webhook-subscriptions', { url: receiver.url(), events })
  return async (): Promise<Row[]> => {
    const res = await t.http().get('/webhook-deliveries').set(tenant.key).query({ subscription_id: subscription.id, $limit: 100 })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body.data.map((delivery: Row) => delivery.payload)
  }
}

/** A socket and a subscription of the other organization: neither may hear a thing (but the subscription's own creation). */
async function outsiders() {
  const deliveries = await subscribe(globex, ['*'])
  const socket = await sockets.listen({ apiKey: globex.apiKey })
  return async () => {
    await sleep(300)
    expect(socket.received.filter((r) => !r.event.startsWith('webhook-subscriptions ')), "another organization's socket").toEqual([])
    expect(await deliveries(), "another organization's subscription").toEqual([])
  }
}

/** A conversation file as the API stores one: signed upload, then the record. */
async function conversationFile(tenant: Tenant, conversationId: number) {
  const bytes = png(7)
  const signed = await post(tenant, '/storage-url-signing', { type: 'conversation-file', file_name: 'photo.png', content_type: 'image/png', file_size: bytes.length })
  const { pathname, search } = new URL(signed.upload_url)
  expect((await t.http().put(`${pathname}${search}`).set(signed.headers).send(bytes)).status).toBe(200)
  return post(tenant, '/conversation-files', { conversation_id: conversationId, storage_key: signed.storage_key, file_name: 'photo.png', file_type: 'image/png', file_size: bytes.length })
}

async function productMedia(tenant: Tenant, productId: number, seed: number) {
  const res = await t.http().post('/product-media').set(tenant.key).field('product_id', String(productId)).attach('file', png(seed), { filename: 'photo.png', contentType: 'image/png' })
  return created(res, 'product media')
}

async function dealWithLines(tenant: Tenant, lines: number) {
  const board = await createBoard(t, tenant, 'deal')
  const deal = await post(tenant, '/deals', { name: 'Deal', amount: 10, currency: 'EUR', status: 'open', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id })
  const product = await post(tenant, '/products', { name: `Part ${uid()}`, price: 5, currency: 'EUR' })
  const added: Row[] = []
  for (let i = 0; i < lines; i++) added.push(await post(tenant, '/deal-products', { deal_id: deal.id, product_id: product.id, quantity: i + 1, price: 5 }))
  return { deal, lines: added }
}

describe('deletes that take dependent records with them', () => {
  it('when a conversation is deleted, then each of its messages and files is one removed event and one conversation-messages.deleted delivery, in the shape a delete of the message answers', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const nothingElsewhere = await outsiders()
    const deliveries = await subscribe(acme, ['conversation-messages.deleted'])
    const conversation = await createConversation(t, acme)
    const messages: Row[] = []
    for (const content of ['One', 'Two', 'Three']) messages.push(await post(acme, '/conversation-messages-playground', { conversation_id: conversation.id, content }))
    const file = await conversationFile(acme, conversation.id)
    // A message deleted on its own: what a removed message looks like.
    const alone = await remove(acme, `/conversation-messages-playground/${messages[0].id}`)
    const cascaded = messages.slice(1).map((message) => message.id)

    const deleted = await remove(acme, `/conversations/${conversation.id}`)
    await vi.waitFor(() => expect(heard(listener, 'conversations').map((row) => row.id)).toEqual([conversation.id]))
    await vi.waitFor(() => expect(sorted(heard(listener, 'conversation-messages-playground').map((row) => row.id))).toEqual(sorted([alone.id, ...cascaded])))
    await vi.waitFor(() => expect(heard(listener, 'conversation-files').map((row) => row.id)).toEqual([file.id]))
    const payloads = heard(listener, 'conversation-messages-playground').filter((row) => cascaded.includes(row.id))
    for (const payload of payloads) {
      expect(Object.keys(payload).sort()).toEqual(Object.keys(alone).sort())
      expect(payload).toMatchObject({ conversation_id: conversation.id, deleted_at: deleted.deleted_at })
    }
    expect(heard(listener, 'conversation-files')[0]).toMatchObject({ id: file.id, file_name: 'photo.png', deleted_at: deleted.deleted_at })

    const events = await deliveries()
    expect(events.map((event) => event.type)).toEqual(Array(3).fill('conversation-messages.deleted'))
    expect(sorted(events.map((event) => event.data.object.id))).toEqual(sorted([alone.id, ...cascaded]))
    for (const payload of payloads) expect(events.find((event) => event.data.object.id === payload.id)!.data.object).toEqual(payload)
    await nothingElsewhere()
  })

  it('when conversations are deleted by a bulk action, then their messages are removed events after its commit', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const conversations = [await createConversation(t, acme), await createConversation(t, acme)]
    const messages: number[] = []
    for (const conversation of conversations) messages.push((await post(acme, '/conversation-messages-playground', { conversation_id: conversation.id, content: 'Hi' })).id)
    const res = await t.http().post('/conversations-bulk-actions').set(acme.key).send({ action: 'delete', ids: conversations.map((c) => c.id) })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    await vi.waitFor(() => expect(sorted(heard(listener, 'conversation-messages-playground').map((row) => row.id))).toEqual(sorted(messages)))
    for (const payload of heard(listener, 'conversation-messages-playground')) expect(payload.deleted_at).toEqual(expect.any(String))
  })

  it('when a deal is deleted, alone or in a batch, then each of its products is one removed event and one deal-products.deleted delivery', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const nothingElsewhere = await outsiders()
    const deliveries = await subscribe(acme, ['deal-products.deleted'])
    const single = await dealWithLines(acme, 2)
    const batched = await dealWithLines(acme, 1)
    const lines = [...single.lines, ...batched.lines].map((line) => line.id)

    const deleted = await remove(acme, `/deals/${single.deal.id}`)
    const batch = await t.http().post('/deals').set(acme.key).set('X-Service-Method', 'batch-delete').send({ ids: [batched.deal.id] })
    expect(batch.status, JSON.stringify(batch.body)).toBe(200)
    await vi.waitFor(() => expect(sorted(heard(listener, 'deal-products').map((row) => row.id))).toEqual(sorted(lines)))
    for (const line of single.lines) {
      expect(heard(listener, 'deal-products').find((row) => row.id === line.id)).toEqual({ ...line, deleted_at: deleted.deleted_at, updated_at: deleted.deleted_at })
    }
    expect(heard(listener, 'deal-products').find((row) => row.id === batched.lines[0].id)!.deleted_at).toBe(batch.body[0].deleted_at)

    const events = await deliveries()
    expect(sorted(events.map((event) => event.data.object.id))).toEqual(sorted(lines))
    for (const event of events) {
      expect(event.type).toBe('deal-products.deleted')
      expect(event.data.object).toEqual(heard(listener, 'deal-products').find((row) => row.id === event.data.object.id))
    }
    await nothingElsewhere()
  })

  it('when a pipeline is deleted, then each of its stages is one removed event', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const nothingElsewhere = await outsiders()
    const { pipeline, stages } = await createBoard(t, acme, 'deal')
    const deleted = await remove(acme, `/pipelines/${pipeline.id}`)
    await vi.waitFor(() => expect(sorted(heard(listener, 'pipeline-stages').map((row) => row.id))).toEqual(sorted(stages.map((stage) => stage.id))))
    for (const stage of stages) {
      expect(heard(listener, 'pipeline-stages').find((row) => row.id === stage.id)).toEqual({ ...stage, deleted_at: deleted.deleted_at, updated_at: deleted.deleted_at })
    }
    await nothingElsewhere()
  })

  it('when a product is deleted, then each of its media is one removed event', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const nothingElsewhere = await outsiders()
    const product = await post(acme, '/products', { name: `Pictured ${uid()}`, price: 1, currency: 'EUR' })
    const media = [await productMedia(acme, product.id, 1), await productMedia(acme, product.id, 2)]
    const deleted = await remove(acme, `/products/${product.id}`)
    await vi.waitFor(() => expect(sorted(heard(listener, 'product-media').map((row) => row.id))).toEqual(sorted(media.map((item) => item.id))))
    for (const item of media) {
      expect(heard(listener, 'product-media').find((row) => row.id === item.id)).toMatchObject({ id: item.id, product_id: product.id, deleted_at: deleted.deleted_at })
    }
    await nothingElsewhere()
  })
})
