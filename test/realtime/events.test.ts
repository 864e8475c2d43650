import crypto from 'node:crypto'
import { describe, expect, it, vi } from 'vitest'
import feathersCore from '@feathersjs/feathers'
import type { TestApp } from '../helpers/app.js'
import { addMember, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { heard, ids, serveSockets } from '../helpers/sockets.js'
import { createBoard, createContact, createConversation } from '../conversations/fixtures.js'
import { at, inDays, link, resourceWithHours } from '../reservations/fixtures.js'
import { png } from '../storage/fixtures.js'
import { publishedPaths } from '../../src/realtime-events.js'
import { registrationOf } from '../../src/engine/tenant-resource.js'
import { secretFieldsOf } from '../../src/secret-fields.js'
import { inTransaction } from '../../src/hooks/deferred-events.js'
import { useApp } from '../helpers/use-app.js'

/**
 * Record events over Socket.io for every tenant resource (docs/realtime.md): found by how each
 * service was registered, so a resource registered through the factory is covered the day it is.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const uid = () => crypto.randomUUID().slice(0, 8)

type Row = Record<string, any>
/** How a record of a resource is written in an organization through the API: the record's id and the event it causes. */
type Recipe = (tenant: Tenant) => Promise<{ id: number; event: 'created' | 'patched' | 'removed'; answer?: Row }>

// Tenant resources no API call writes: webhook deliveries are written by the outbox alone, erasure records by an erasure.
const NOT_WRITTEN_THROUGH_THE_API = new Set(['webhook-deliveries', 'personal-data-erasures'])

let t: TestApp
let sockets: Awaited<ReturnType<typeof serveSockets>>
let acme: Tenant
let globex: Tenant

useApp({ tenants: ['Acme', 'Globex'], sockets: true }, (app) => ({ t, tenants: [acme, globex], sockets } = app))

const post = async (tenant: Tenant, path: string, body: Row, headers = tenant.key) => {
  const res = await t.http().post(path).set(headers).send(body)
  expect(res.status, `POST ${path} ${JSON.stringify(res.body)}`).toBe(201)
  return res.body
}
const createdBy = (path: string, body: (tenant: Tenant) => Promise<Row> | Row): Recipe => async (tenant) => {
  const answer = await post(tenant, `/${path}`, await body(tenant))
  return { id: answer.id, event: 'created', answer }
}

/** A message of a channel that only providers write (inbound): stored directly, then deleted through the API. */
const removedMessage = (channel: string): Recipe => async (tenant) => {
  const conversation = await createConversation(t, tenant, { channel })
  const [row] = await t.db('conversation_messages').insert({
    organization_id: tenant.organization.id, conversation_id: conversation.id, channel, direction: 'inbound', sender_type: 'contact',
    content: 'From the provider', content_type: 'text', metadata: '{}', status: 'received'
  }).returning('id')
  const res = await t.http().delete(`/conversation-messages-${channel}/${row.id}`).set(tenant.key)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return { id: row.id, event: 'removed', answer: res.body }
}

async function bookable(tenant: Tenant) {
  const service = await post(tenant, '/reservation-services', { name: `Session ${uid()}`, duration_minutes: 60, max_advance_days: 400 })
  const resource = await resourceWithHours(t, tenant, { name: `Ana ${uid()}` }, [['09:00', '17:00']])
  await link(t, tenant, service.id, resource.id)
  return { service, resource }
}

const RECIPES: Record<string, Recipe> = {
  'organizations-users-invites': createdBy('organizations-users-invites', () => ({ email: `invited-${uid()}@example.test`, role: 'member' })),
  'api-keys': async (tenant) => {
    const answer = await post(tenant, '/api-keys', { organization_id: tenant.organization.id, name: `key ${uid()}` }, tenant.bearer)
    return { id: answer.id, event: 'created', answer }
  },
  'organizations-users': async (tenant) => {
    const member = await addMember(t, tenant)
    const membership = await t.db('organizations_users').where({ organization_id: tenant.organization.id, user_id: member.user.id }).first('id')
    const res = await t.http().patch(`/organizations-users/${membership.id}`).set(tenant.bearer).send({ role: 'admin' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return { id: membership.id, event: 'patched', answer: res.body }
  },
  companies: createdBy('companies', () => ({ name: `Initech ${uid()}`, website: 'https://initech.example' })),
  'custom-fields': createdBy('custom-fields', () => ({ entity_type: 'contact', key: `k${uid()}`, name: `Field ${uid()}`, field_type: 'text' })),
  contacts: createdBy('contacts', () => ({ first_name: 'Ada', email: `ada-${uid()}@example.test`, phone: '+44 20 7946 0958', phone_country_code: '+44' })),
  pipelines: createdBy('pipelines', () => ({ name: `Board ${uid()}`, type: 'deal' })),
  'pipeline-stages': createdBy('pipeline-stages', async (tenant) => ({ pipeline_id: (await post(tenant, '/pipelines', { name: `Board ${uid()}`, type: 'deal' })).id, name: 'Lead', position: 0 })),
  products: createdBy('products', () => ({ name: `Widget ${uid()}`, price: 100, currency: 'EUR' })),
  deals: createdBy('deals', async (tenant) => {
    const board = await createBoard(t, tenant, 'deal')
    return { name: 'Big deal', amount: 1500, currency: 'EUR', status: 'open', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id }
  }),
  'deal-products': createdBy('deal-products', async (tenant) => {
    const board = await createBoard(t, tenant, 'deal')
    const deal = await post(tenant, '/deals', { name: 'Deal', amount: 10, currency: 'EUR', status: 'open', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id })
    const product = await post(tenant, '/products', { name: `Part ${uid()}`, price: 5, currency: 'EUR' })
    return { deal_id: deal.id, product_id: product.id, quantity: 2, price: 5 }
  }),
  'activity-types': createdBy('activity-types', () => ({ name: `Visit ${uid()}` })),
  activities: createdBy('activities', () => ({ subject: 'Call Ada', start_date: '2030-03-09', start_time: '10:00' })),
  'reservation-services': createdBy('reservation-services', () => ({ name: `Session ${uid()}`, duration_minutes: 30 })),
  'reservation-resources': createdBy('reservation-resources', () => ({ name: `Room ${uid()}`, type: 'room' })),
  'reservation-service-resources': createdBy('reservation-service-resources', async (tenant) => ({
    service_id: (await post(tenant, '/reservation-services', { name: `S ${uid()}`, duration_minutes: 30 })).id,
    resource_id: (await post(tenant, '/reservation-resources', { name: `R ${uid()}`, type: 'room' })).id,
    is_required: true, quantity: 1
  })),
  'reservation-resource-availability': createdBy('reservation-resource-availability', async (tenant) => ({
    resource_id: (await post(tenant, '/reservation-resources', { name: `R ${uid()}`, type: 'room' })).id, day_of_week: 1, start_time: '09:00', end_time: '17:00'
  })),
  'reservation-resource-exceptions': createdBy('reservation-resource-exceptions', async (tenant) => ({
    resource_id: (await post(tenant, '/reservation-resources', { name: `R ${uid()}`, type: 'room' })).id, date: '2030-01-07', type: 'blocked', reason: 'holiday'
  })),
  reservations: createdBy('reservations', async (tenant) => {
    const { service } = await bookable(tenant)
    return { service_id: service.id, contact_id: (await createContact(t, tenant)).id, start_datetime: at(inDays(5), '10:00') }
  }),
  'reservation-booking-links': createdBy('reservation-booking-links', async (tenant) => ({ slug: `book-${uid()}`, name: 'Book', service_ids: [(await bookable(tenant)).service.id] })),
  'ai-assistants': createdBy('ai-assistants', () => ({ name: `Helper ${uid()}` })),
  'product-media': async (tenant) => {
    const product = await post(tenant, '/products', { name: `Pictured ${uid()}`, price: 1, currency: 'EUR' })
    const res = await t.http().post('/product-media').set(tenant.key).field('product_id', String(product.id)).attach('file', png(3), { filename: 'photo.png', contentType: 'image/png' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return { id: res.body.id, event: 'created', answer: res.body }
  },
  imports: async (tenant) => {
    const res = await t.http().post('/imports').set(tenant.key).field('resource', 'contacts')
      .attach('file', Buffer.from('First Name\nAda\n'), { filename: 'contacts.csv', contentType: 'text/csv' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return { id: res.body.id, event: 'created', answer: res.body }
  },
  'channel-accounts': createdBy('channel-accounts', () => ({ channel: 'webchat', name: `Site ${uid()}`, config: {} })),
  conversations: createdBy('conversations', async (tenant) => ({ channel: 'playground', contact_id: (await createContact(t, tenant)).id })),
  'conversation-messages-playground': createdBy('conversation-messages-playground', async (tenant) => ({ conversation_id: (await createConversation(t, tenant)).id, content: 'Hello' })),
  'conversation-messages-sms': removedMessage('sms'),
  'conversation-messages-whatsapp': removedMessage('whatsapp'),
  'conversation-messages-instagram': removedMessage('instagram'),
  'conversation-messages-messenger': removedMessage('messenger'),
  'conversation-messages-webchat': removedMessage('webchat'),
  'conversation-predefined-messages': createdBy('conversation-predefined-messages', () => ({ title: `Hi ${uid()}`, content: 'Hi there' })),
  'conversation-files': createdBy('conversation-files', async (tenant) => {
    const conversation = await createConversation(t, tenant)
    const bytes = png(5)
    const signed = await post(tenant, '/storage-url-signing', { type: 'conversation-file', file_name: 'photo.png', content_type: 'image/png', file_size: bytes.length })
    const { pathname, search } = new URL(signed.upload_url)
    expect((await t.http().put(`${pathname}${search}`).set(signed.headers).send(bytes)).status).toBe(200)
    return { conversation_id: conversation.id, storage_key: signed.storage_key, file_name: 'photo.png', file_type: 'image/png', file_size: bytes.length }
  }),
  automations: createdBy('automations', () => ({ name: `Welcome ${uid()}`, actions: [{ type: 'send_message', content: 'Hi!' }] })),
  'webhook-subscriptions': createdBy('webhook-subscriptions', () => ({ url: 'https://hooks.example.test/crm', events: ['*'] }))
}

const tenantResources = () => publishedPaths(t.app).filter((path) => registrationOf(t.app, path) === 'tenant-resource')

/** The fields a resource never sends: hidden columns and secrets shown once. */
const withheldFields = (path: string) => {
  const service = t.app.service(path as any) as any
  return [...(service.options?.read?.hidden ?? []), ...secretFieldsOf(service)]
}

/** Whether a credential may list a resource through REST in the tenant's organization. */
async function mayList(path: string, headers: Record<string, string>, tenant: Tenant) {
  const res = await t.http().get(`/${path}`).set(headers).query({ organization_id: tenant.organization.id, $limit: 1 })
  expect([200, 403], `GET /${path} ${JSON.stringify(res.body)}`).toContain(res.status)
  return res.status === 200
}

describe('events of every tenant resource', () => {
  it('when a record of each tenant resource is written, then its event reaches exactly the sockets of its organization that may read the resource, as a read by id answers it, without hidden or secret fields', async () => {
    const member = await addMember(t, acme, 'member')
    const memberKey = await keyFor(t, acme, member.user.id)
    const listeners = {
      ownerKey: await sockets.listen({ apiKey: acme.apiKey }),
      ownerJwt: await sockets.listen({ accessToken: acme.token }),
      memberJwt: await sockets.listen({ accessToken: member.token }),
      memberKey: await sockets.listen({ apiKey: memberKey['x-api-key'] })
    }
    const credentials = { ownerKey: acme.key, ownerJwt: acme.bearer, memberJwt: member.bearer, memberKey }
    const outsiders = [await sockets.listen({ apiKey: globex.apiKey }), await sockets.listen({ accessToken: globex.token })]

    const paths = tenantResources()
    const uncovered = paths.filter((path) => !RECIPES[path] && !NOT_WRITTEN_THROUGH_THE_API.has(path))
    expect(uncovered, `tenant resources without a way to write a record here: ${uncovered.join(', ')}`).toEqual([])
    expect(paths.length).toBeGreaterThanOrEqual(30)

    const checked: string[] = []
    for (const path of paths.filter((p) => RECIPES[p])) {
      const { id, event, answer } = await RECIPES[path](acme)
      await vi.waitFor(() => expect(ids(listeners.ownerJwt, path, event), `${path} ${event}`).toContain(id), { timeout: 3_000 })
      const payload = heard(listeners.ownerJwt, path, event).find((r) => r.data.id === id)!.data

      // The payload is the record as the API answers it: a read by id, or the answer of a delete.
      if (event === 'removed') expect(payload, path).toEqual(answer)
      else {
        const read = await t.http().get(`/${path}/${id}`).set(acme.bearer)
        expect(read.status, path).toBe(200)
        expect(payload, path).toEqual(read.body)
      }
      for (const field of withheldFields(path)) expect(payload, `${path} ${field}`).not.toHaveProperty(field)

      // Every socket of the organization hears it exactly when it may read the resource.
      await sleep(100)
      for (const [name, listener] of Object.entries(listeners)) {
        const allowed = await mayList(path, credentials[name as keyof typeof credentials], acme)
        expect(ids(listener, path, event).filter((heardId) => heardId === id), `${path} ${event} to ${name}`).toEqual(allowed ? [id] : [])
      }
      checked.push(path)
    }
    expect(checked).toEqual(expect.arrayContaining(['companies', 'contacts', 'deals', 'api-keys', 'webhook-subscriptions', 'organizations-users', 'conversation-messages-whatsapp']))
    // Role-limited resources were heard by the owner and not by the member (a check that the check above checks something).
    expect(ids(listeners.memberJwt, 'api-keys')).toEqual([])
    expect(ids(listeners.ownerKey, 'api-keys')).toEqual([])
    expect(ids(listeners.memberJwt, 'companies').length).toBeGreaterThan(0)
    for (const outsider of outsiders) expect(outsider.received, 'another organization\'s sockets').toEqual([])
  }, 240_000)
})

describe('batches, merges and bulk actions', () => {
  it('when companies are created, upserted and deleted in batches, then each record changed is one event, after the batch', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const outsider = await sockets.listen({ apiKey: globex.apiKey })
    const batch = await t.http().post('/companies').set(acme.key).send([{ name: 'One', external_id: `x-${uid()}` }, { name: 'Two' }, { name: 'Three' }])
    expect(batch.status, JSON.stringify(batch.body)).toBe(201)
    const created = batch.body.map((company: Row) => company.id)
    await vi.waitFor(() => expect(ids(listener, 'companies', 'created')).toEqual(created))
    const read = await t.http().get(`/companies/${created[1]}`).set(acme.key)
    expect(heard(listener, 'companies', 'created')[1].data).toEqual(read.body)

    const upsert = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'upsert')
      .send({ idProperty: 'external_id', records: [{ external_id: batch.body[0].external_id, name: 'One again' }, { external_id: `x-${uid()}`, name: 'Four' }] })
    expect(upsert.status, JSON.stringify(upsert.body)).toBe(201)
    await vi.waitFor(() => expect(heard(listener, 'companies').length).toBe(5))
    expect(heard(listener, 'companies').slice(3).map((r) => [r.event, r.data.id, r.data.name])).toEqual([
      ['companies patched', created[0], 'One again'],
      ['companies created', upsert.body.data[1].id, 'Four']
    ])

    const removed = await t.http().post('/companies').set(acme.key).set('X-Service-Method', 'batch-delete').send({ ids: created })
    expect(removed.status, JSON.stringify(removed.body)).toBe(200)
    await vi.waitFor(() => expect(ids(listener, 'companies', 'removed')).toEqual(created))
    expect(heard(listener, 'companies', 'removed').map((r) => r.data.deleted_at)).toEqual(removed.body.map((company: Row) => company.deleted_at))
    expect(outsider.received).toEqual([])
  })

  it('when activities are completed in bulk, then each activity changed is one patched event, and no event carries the bulk answer', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const first = await post(acme, '/activities', { subject: 'One' })
    const second = await post(acme, '/activities', { subject: 'Two' })
    const res = await t.http().patch('/activities').set(acme.key).send({ ids: [first.id, second.id], done: true })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    await vi.waitFor(() => expect(ids(listener, 'activities', 'patched').sort()).toEqual([first.id, second.id].sort()))
    expect(heard(listener, 'activities', 'patched').map((r) => r.data.done)).toEqual([true, true])
    await sleep(300)
    expect(heard(listener, 'activities').every((r) => typeof r.data.id === 'number')).toBe(true)
  })

  it('when media of a product are reordered, then each item moved is one product-media patched event', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const product = await post(acme, '/products', { name: `Pictured ${uid()}`, price: 1, currency: 'EUR' })
    const media: number[] = []
    for (const seed of [1, 2]) {
      const res = await t.http().post('/product-media').set(acme.key).field('product_id', String(product.id)).attach('file', png(seed), { filename: 'photo.png', contentType: 'image/png' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      media.push(res.body.id)
    }
    const res = await t.http().post('/product-media/reorder').set(acme.key).send({ product_id: product.id, positions: [{ id: media[1], position: 0 }, { id: media[0], position: 1 }] })
    expect(res.body).toEqual({ success: true, updated: 2 })
    await vi.waitFor(() => expect(ids(listener, 'product-media', 'patched').sort()).toEqual([...media].sort()))
    const moved = heard(listener, 'product-media', 'patched').find((r) => r.data.id === media[1])!.data
    expect(moved).toEqual((await t.http().get(`/product-media/${media[1]}`).set(acme.key)).body)
    expect(moved.position).toBe(0)
    expect(heard(listener, 'product-media/reorder')).toEqual([])
  })

  it('when an invitation is accepted, then the new membership is a created event for the organization\'s members', async () => {
    const listener = await sockets.listen({ accessToken: acme.token })
    const invitation = await post(acme, '/organizations-users-invites', { email: `joining-${uid()}@example.test`, role: 'member' })
    const res = await t.http().patch(`/organizations-users-invites/${invitation.id}`).send({ status: 'accepted', token: invitation.token, password: 'a long secret' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    await vi.waitFor(() => expect(heard(listener, 'organizations-users', 'created').map((r) => r.data.user_id)).toEqual([res.body.accepted_by_user_id]))
    const membership = heard(listener, 'organizations-users', 'created')[0].data
    expect(membership).toEqual((await t.http().get(`/organizations-users/${membership.id}`).set(acme.bearer)).body)
    await vi.waitFor(() => expect(ids(listener, 'organizations-users-invites', 'patched')).toEqual([invitation.id]))
  })

  it('when contacts are merged, then the duplicate\'s removal and the primary\'s change are events', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const primary = await createContact(t, acme, { email: `same-${uid()}@example.test` })
    const duplicate = await createContact(t, acme)
    const res = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'merge').send({ primary_id: primary.id, duplicate_ids: [duplicate.id] })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    await vi.waitFor(() => expect(ids(listener, 'contacts', 'removed')).toEqual([duplicate.id]))
    await vi.waitFor(() => expect(ids(listener, 'contacts', 'patched')).toEqual([primary.id]))
  })
})

describe('records written by public routes', () => {
  it('when a visitor books through a public link, then the new contact and the reservation are events of the organization, without the manage token; a taken time sends none', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const outsider = await sockets.listen({ apiKey: globex.apiKey })
    const { service } = await bookable(acme)
    const slug = `book-${uid()}`
    await post(acme, '/reservation-booking-links', { slug, name: 'Book', service_ids: [service.id] })
    const start = at(inDays(6), '10:00')
    const contact = { first_name: 'Marta', last_name: 'Gil', email: `marta-${uid()}@example.test` }
    const booked = await t.http().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: start, contact })
    expect(booked.status, JSON.stringify(booked.body)).toBe(201)
    await vi.waitFor(() => expect(ids(listener, 'reservations', 'created')).toEqual([booked.body.reservation.id]))
    await vi.waitFor(() => expect(heard(listener, 'contacts', 'created').map((r) => r.data.email)).toEqual([contact.email]))
    const reservation = heard(listener, 'reservations', 'created')[0].data
    expect(reservation).toEqual((await t.http().get(`/reservations/${reservation.id}`).set(acme.key)).body)
    expect(JSON.stringify(listener.received)).not.toContain(booked.body.manage_token)

    const taken = await t.http().post(`/public/booking-links/${slug}/reservations`).send({ service_id: service.id, start_datetime: start, contact: { ...contact, email: `other-${uid()}@example.test` } })
    expect(taken.status).toBe(409)
    await sleep(500)
    expect(heard(listener, 'contacts', 'created')).toHaveLength(1)
    expect(heard(listener, 'reservations')).toHaveLength(1)
    expect(outsider.received).toEqual([])
  })
})

describe('events after commit only', () => {
  it('when a batch has an invalid record, then nothing is written and no event is sent', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const res = await t.http().post('/companies').set(acme.key).send([{ name: 'Fine' }, { name: 42 }])
    expect(res.status).toBe(400)
    await sleep(500)
    expect(listener.received).toEqual([])
  })

  it('when writes run in a transaction that rolls back, then none of their events is sent; when it commits, they are, after the commit', async () => {
    const listener = await sockets.listen({ apiKey: acme.apiKey })
    const caller = { userId: acme.user.id, roles: new Map([[acme.organization.id, 'owner' as const]]) }
    const write = (inside: object, name: string) => t.app.service('companies').create({ organization_id: acme.organization.id, name } as any, { ...inside, caller } as any)
    await expect(inTransaction(t.db, async (inside) => {
      await write(inside, 'Rolled back')
      await t.app.service('companies').create([{ organization_id: acme.organization.id, name: 'Rolled back too' }] as any, { ...inside, caller } as any)
      await sleep(300)
      expect(listener.received).toEqual([])
      throw new Error('roll back')
    })).rejects.toThrow('roll back')
    await sleep(500)
    expect(listener.received).toEqual([])

    const kept = await inTransaction(t.db, async (inside) => {
      const company = await write(inside, 'Committed')
      await sleep(300)
      expect(listener.received).toEqual([])
      return company
    })
    await vi.waitFor(() => expect(ids(listener, 'companies', 'created')).toEqual([kept.id]))
  })
})

describe('what a published service is', () => {
  it('when the services are listed, then every tenant resource and the account services publish, and nothing else does', () => {
    const published = publishedPaths(t.app)
    expect(published).toEqual(expect.arrayContaining(['users', 'organizations', 'organizations-users', 'companies', 'conversations']))
    for (const path of Object.keys(t.app.services)) {
      const kind = registrationOf(t.app, path)
      expect(published.includes(path), path).toBe(kind === 'tenant-resource' || path === 'users' || path === 'organizations')
    }
    expect(feathersCore.getServiceOptions(t.app.service('api-keys')) as any).toMatchObject({ readRoles: ['owner', 'admin'], refusesApiKeys: true })
  })
})
