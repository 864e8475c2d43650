import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Knex } from 'knex'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { representRecord } from '../../src/hooks/resolve-records.js'
import { RecordService } from '../../src/engine/record-service.js'
import type { Relation } from '../../src/engine/read-model.js'
import { declarationOf, registrationOf } from '../../src/engine/tenant-resource.js'
import { created, createBoard, createContact } from '../conversations/fixtures.js'

/**
 * The differential test of the one read path: for every tenant resource, each record a list or a
 * read by id answers (Postgres writes it, src/engine/read-model.ts) equals the stored row as the
 * resource's resolvers shape it for a write's answer or an event, with its relations loaded one by
 * one here, on whichever database the suite runs.
 */

type Row = Record<string, any>

const json = (value: unknown) => JSON.parse(JSON.stringify(value))

/** The related record(s) of a stored row, loaded plainly: the reference the engine's SQL must equal. */
async function loadRelation(db: Knex, row: Row, relation: Relation) {
  const select = relation.columns.map((name) => (relation.computed?.[name] ? db.raw(`${relation.computed[name]} AS ??`, [name]) : `${relation.table}.${name}`))
  const scoped = (query: Knex.QueryBuilder) => {
    if (relation.tenant !== false) {
      query.where(`${relation.table}.organization_id`, row.organization_id)
      if (!relation.withDeleted) query.whereNull(`${relation.table}.deleted_at`)
    }
    return query
  }
  if (relation.from) {
    if (row[relation.from] === null) return null
    return (await scoped(db(relation.table).select(select).where(`${relation.table}.id`, row[relation.from])).first()) ?? null
  }
  if (relation.count) return Number((await scoped(db(relation.table).count({ n: '*' }).where(`${relation.table}.${relation.count}`, row.id)).first())!.n)
  if (relation.many) return scoped(db(relation.table).select(select).where(`${relation.table}.${relation.many}`, row.id)).orderBy(`${relation.table}.id`)
  const ids: number[] = row[relation.listedIn!] ?? []
  const found: Row[] = await scoped(db(relation.table).select(select).whereIn(`${relation.table}.id`, ids))
  return ids.map((id) => found.find((record) => record.id === id)).filter(Boolean)
}

async function reference(t: TestApp, path: string, row: Row, relations: Relation[] = []) {
  const { resolvers } = declarationOf(t.app, path)!
  const represented = await representRecord(resolvers?.result ?? [], resolvers?.external)(row, { app: t.app, params: {}, method: 'get', path } as any)
  const record: Row = json(represented)
  for (const relation of relations) record[relation.as] = json(await loadRelation(t.db, row, relation))
  return record
}

describe('the read model', () => {
  let t: TestApp
  let tenant: Tenant
  const organization = () => tenant.organization.id
  const post = async (path: string, body: Row) => created(await t.http().post(path).set(tenant.key).send(body), path)

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Rendered')
    const member = await addMember(t, tenant, 'admin')
    await post('/webhook-subscriptions', { url: 'https://hooks.example.test/crm', events: ['*'] })
    await post('/custom-fields', { entity_type: 'contact', key: 'source', name: 'Source', field_type: 'text' })
    await post('/custom-fields', { entity_type: 'contact', key: 'score', name: 'Score', field_type: 'number' })
    await post('/custom-fields', { entity_type: 'company', key: 'tier', name: 'Tier', field_type: 'text' })
    const company = await post('/companies', { name: 'Initech', website: 'https://initech.example', custom_fields_by_name: { Tier: 'gold' } })
    const gone = await post('/companies', { name: 'Gone Ltd' })
    const ada = await createContact(t, tenant, { company_id: company.id, owned_by_user_id: member.user.id, email: 'ada@example.test', custom_fields_by_name: { Source: 'fair', Score: 7.5 } })
    await createContact(t, tenant, { company_id: gone.id, phone: '+44 20 7946 0958', phone_country_code: '+44' })
    await t.http().delete(`/companies/${gone.id}`).set(tenant.key).expect(200)
    const board = await createBoard(t, tenant, 'deal')
    const product = await post('/products', { name: 'Widget', sku: 'W-1', price: '19.99', currency: 'EUR' })
    const deal = await post('/deals', { name: 'Big deal', status: 'open', amount: '1500.50', currency: 'EUR', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[1].id, company_id: company.id, contact_id: ada.id, owned_by_user_id: member.user.id })
    await post('/deal-products', { deal_id: deal.id, product_id: product.id, quantity: '2.5', price: '19.99', discount_type: 'percentage', discount_percentage: '10' })
    await post('/deal-products', { deal_id: deal.id, product_id: product.id, quantity: 1, price: 5 })
    await post('/deals', { name: 'Small deal', status: 'open', amount: 0, currency: 'USD', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id })
    await post('/activities', { subject: 'Call Ada', start_date: '2026-03-09', start_time: '10:00', deal_id: deal.id, contact_id: ada.id, company_id: company.id, assigned_to_user_id: member.user.id })
    await post('/activities', { subject: 'Plain note', start_date: '2026-03-10' })
    const type = await post('/activity-types', { name: 'Site visit' })
    await post('/activities', { subject: 'Visit', start_date: '2026-03-11', activity_type: 'Site visit' })
    expect(type.id).toBeGreaterThan(0)
    const inbox = await createBoard(t, tenant, 'conversation')
    const conversation = await post('/conversations', { channel: 'playground', contact_id: ada.id, pipeline_id: inbox.pipeline.id, pipeline_stage_id: inbox.stages[0].id, assignee_user_ids: [member.user.id, tenant.user.id] })
    await post('/conversation-messages-playground', { conversation_id: conversation.id, content: 'Hello' })
    await post('/organizations-users-invites', { email: 'new.person@example.test', role: 'member' })
    const expired = await post('/organizations-users-invites', { email: 'late.person@example.test', role: 'member' })
    await t.db('organizations_users_invites').where({ id: expired.id }).update({ expires_at: new Date(Date.now() - 60_000) })
    await post('/channel-accounts', { channel: 'webchat', name: 'Site chat', config: {} })
    await t.db('channel_accounts').insert({ organization_id: organization(), channel: 'sms', name: 'Texts', config: {}, webhook_key: `k-${crypto.randomUUID()}`, verify_token: 'v-rendered', credentials: 'sealed', provider_id: `+1${Date.now()}` })
    await post('/conversation-predefined-messages', { title: 'Hi', content: 'Hi there' })
    await post('/automations', { name: 'Welcome', actions: [{ type: 'send_message', content: 'Hi!' }] })
    await post('/ai-assistants', { name: 'Helper' })
    await post('/reservation-resources', { name: 'Room', type: 'room' })
  }, 120_000)

  afterAll(async () => {
    await t?.close()
  })

  /** Every tenant resource read by this engine, with its declared joins. */
  const resources = () => Object.keys(t.app.services)
    .filter((path) => registrationOf(t.app, path) === 'tenant-resource' && t.app.service(path as any) instanceof RecordService)
    .map((path) => ({ path, service: t.app.service(path as any) as unknown as RecordService, joins: declarationOf(t.app, path)?.joins }))

  it('when every tenant resource is listed, then each record equals its stored row as the resolvers shape it, relations included', async () => {
    const compared: string[] = []
    for (const { path, service, joins } of resources()) {
      const rows: Row[] = await service.createQuery({ query: { organization_id: organization(), $sort: { id: 1 } } } as any)
      if (rows.length === 0) continue
      const page = await service._find({ query: { organization_id: organization(), $limit: 100, $sort: { id: 1 } }, paginate: { default: 100, max: 100 }, relations: joins?.list } as any)
      expect(page.total, path).toBe(rows.length)
      const expected = await Promise.all(rows.map((row) => reference(t, path, row, joins?.list)))
      expect(json(page.data), path).toEqual(expected)
      compared.push(path)
    }
    expect(compared).toEqual(expect.arrayContaining(['companies', 'contacts', 'deals', 'deal-products', 'activities', 'conversations', 'organizations-users-invites', 'organizations-users', 'products', 'pipelines', 'custom-fields', 'channel-accounts', 'automations', 'ai-assistants', 'reservation-resources', 'activity-types', 'webhook-subscriptions', 'webhook-deliveries']))
  })

  it('when every record is read by id, then it equals its stored row as the resolvers shape it, with the record joins', async () => {
    for (const { path, service, joins } of resources()) {
      const rows: Row[] = await service.createQuery({ query: { organization_id: organization() } } as any)
      const relations = joins?.record ?? joins?.list
      for (const row of rows) {
        const record = await service._get(row.id, { query: { organization_id: organization() }, relations } as any)
        expect(json(record), `${path} ${row.id}`).toEqual(await reference(t, path, row, relations))
      }
    }
  })

  it('when a list is read at two page sizes, then it is one statement either way', async () => {
    for (const { path, service, joins } of resources()) {
      for (const $limit of [1, 50]) {
        const { count } = await countQueries(t.db, () => service._find({ query: { organization_id: organization(), $limit }, paginate: { default: 10, max: 100 }, relations: joins?.list } as any))
        expect(count, `${path} $limit ${$limit}`).toBe(1)
      }
    }
  })

  it('when a REST client lists or reads, then the answer is the same JSON as the service gives internally', async () => {
    const listed = await t.http().get('/deals').set(tenant.key).query({ fastJoinForDealsList: true }).expect(200)
    const internal = await t.app.service('deals').find({ query: { organization_id: organization(), fastJoinForDealsList: true }, caller: undefined, system: true } as any)
    expect(listed.body).toEqual(json(internal))
    const [deal] = listed.body.data
    const read = await t.http().get(`/deals/${deal.id}`).set(tenant.key).expect(200)
    expect(read.body.dealProducts).toHaveLength(2)
    expect(read.body.dealProducts[0]).toMatchObject({ quantity: '2.5000', price: '19.99' })
  })
})
