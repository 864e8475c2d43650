import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { SocketCredentials } from '../../src/realtime-connections.js'
import type { Connection } from '../../src/realtime-connections.js'
import { ROWS, fillPages } from './statement-count-fixtures.js'
import type { Pages } from './statement-count-fixtures.js'

/**
 * What a call costs in SQL statements; every count of the suite is here. A page is one statement
 * whatever its size and relations, a read by id one, a single write one, and a batch, an upsert or
 * a bulk action a few that do not grow with it. countQueries counts the app's knex, which runs
 * the calls' work alone: background work (the outbox worker, the sweeps) has a knex of its own.
 */
describe('statement counts', () => {
  let t: TestApp
  let pages: Pages

  beforeAll(async () => {
    t = await startApp()
    pages = await fillPages(t)
  }, 300_000)
  afterAll(async () => {
    await t?.close()
  })

  /**
   * An API key is read again every few seconds, not per call, and its last use is written a
   * minute at a time. Dated ahead, a key's last use is not written during these counts; a request
   * just before each counted call has verified the key: what is counted is the call's own work.
   */
  const keyAtRest = (tenant: Tenant) =>
    t.db('api_keys').where({ organization_id: tenant.organization.id }).update({ last_used_at: new Date(Date.now() + 86_400_000) })

  async function statementsOf<T>(tenant: Tenant, call: () => Promise<T>) {
    const verified = await t.http().get('/contacts').set(tenant.key).send({ query: { $limit: 1 } })
    expect(verified.status).toBe(200)
    return countQueries(t.app.get('knex'), call)
  }

  const get = (tenant: Tenant, path: string, query: Record<string, unknown> = {}) => t.http().get(path).set(tenant.key).send({ query })
  const post = (tenant: Tenant, path: string, body: unknown, method?: string) => {
    const request = t.http().post(path).set(tenant.key)
    return (method ? request.set('X-Service-Method', method) : request).send(body as object)
  }

  describe('reads', () => {
    beforeAll(() => keyAtRest(pages.tenant))
    const read = (path: string, query: Record<string, unknown> = {}) => get(pages.tenant, path, query)

    const lists: { what: string; path: string; query: () => Record<string, unknown>; joined: (row: any) => unknown }[] = [
      { what: 'companies with their creator and owner', path: '/companies', query: () => ({ fastJoinForCompanyList: true }), joined: (row) => row.creator && row.owner },
      { what: 'companies with their custom values', path: '/companies', query: () => ({}), joined: (row) => typeof row.custom_fields_by_name.Budget === 'number' },
      { what: 'contacts with their company and owner', path: '/contacts', query: () => ({ fastJoinForContactList: true }), joined: (row) => row.company && row.owner },
      { what: 'deals with their company, contact, owner and stage', path: '/deals', query: () => ({ fastJoinForDealsList: true }), joined: (row) => row.company && row.contact && row.owner && row.pipelineStage },
      {
        what: 'activities with their deal, contact, company and users', path: '/activities', query: () => ({ fastJoinForActivityList: true, start_date: '2026-03-02' }),
        joined: (row) => row.deal && row.contact && row.company && row.assigned_to_user && row.created_by_user
      },
      { what: 'conversations with their contact and assignees', path: '/conversations', query: () => ({ fastJoinForConversationList: true }), joined: (row) => row.contact && row.assignees.length === row.assignee_user_ids.length },
      { what: 'reservations with their contact, service and resource', path: '/reservations', query: () => ({ fastJoinForReservationList: true }), joined: (row) => row.contact && row.service && row.resource },
      { what: 'members with their users', path: '/organizations-users', query: () => ({}), joined: (row) => row.user },
      { what: 'invitations with their creators', path: '/organizations-users-invites', query: () => ({}), joined: (row) => row.created_by_user },
      { what: 'product media', path: '/product-media', query: () => ({ product_id: pages.product }), joined: (row) => row.storage_path }
    ]
    it.each(lists)('when a page of $what is read, then one statement, for a page of one as for a page of all', async ({ path, query, joined }) => {
      const one = await statementsOf(pages.tenant, () => read(path, { ...query(), $limit: 1 }))
      const all = await statementsOf(pages.tenant, () => read(path, { ...query(), $limit: ROWS }))
      expect(all.result.status, JSON.stringify(all.result.body)).toBe(200)
      expect(all.result.body.data).toHaveLength(ROWS)
      expect(all.result.body.data.every(joined)).toBe(true)
      expect([one.count, all.count]).toEqual([1, 1])
    })

    it('when pages of contacts are read at $skip 0, 2 and 4, then each is one statement', async () => {
      for (const $skip of [0, 2, 4]) {
        const { result, count } = await statementsOf(pages.tenant, () => read('/contacts', { $limit: 2, $skip }))
        expect(result.body).toMatchObject({ limit: 2, skip: $skip })
        expect(count, `$skip ${$skip}`).toBe(1)
      }
    })

    const byId: { what: string; few: () => string; many: () => string; relations: (record: any) => unknown }[] = [
      { what: 'a deal with six deal products, as one with one', few: () => `/deals/${pages.deals.oneProduct}`, many: () => `/deals/${pages.deals.sixProducts}`, relations: (deal) => deal.dealProducts.length === 6 },
      { what: 'an activity with all its relations, as one with none', few: () => `/activities/${pages.activities.bare}`, many: () => `/activities/${pages.activities.full}`, relations: (activity) => activity.deal && activity.contact && activity.company },
      { what: 'an activity type of five activities, as one of one', few: () => `/activity-types/${pages.activityTypes.oneActivity}`, many: () => `/activity-types/${pages.activityTypes.fiveActivities}`, relations: (type) => type.activities_count === 5 },
      { what: 'a conversation with four assignees, as one with one', few: () => `/conversations/${pages.conversations.oneAssignee}`, many: () => `/conversations/${pages.conversations.fourAssignees}`, relations: (conversation) => conversation.assignees.length === 4 }
    ]
    it.each(byId)('when $what is read by id, then one statement', async ({ few, many, relations }) => {
      const small = await statementsOf(pages.tenant, () => read(few()))
      const large = await statementsOf(pages.tenant, () => read(many()))
      expect(large.result.status, JSON.stringify(large.result.body)).toBe(200)
      expect(relations(large.result.body)).toBeTruthy()
      expect([small.count, large.count]).toEqual([1, 1])
    })

    it('when an invitation is read by id, then two statements: the role check reads it as stored, then the answer', async () => {
      const { result, count } = await statementsOf(pages.tenant, () => read(`/organizations-users-invites/${pages.invitation}`))
      expect(result.body.organization).toMatchObject({ id: pages.tenant.organization.id })
      expect(count).toBe(2)
    })

    it('when a $withDeleted keyset page is read, then one statement, with no count over the rest of the organization', async () => {
      const query = { $withDeleted: true, $after: { updated_at: new Date(0).toISOString(), id: 0 }, $limit: 2 }
      const { result, count } = await statementsOf(pages.tenant, () => read('/contacts', query))
      expect(result.body.data).toHaveLength(2)
      expect(result.body.next).toEqual({ updated_at: result.body.data[1].updated_at, id: result.body.data[1].id })
      expect(count).toBe(1)
    })

    it("when companies are filtered on a custom field by its name, then two statements: the organization's field definitions, then the page", async () => {
      const { result, count } = await statementsOf(pages.tenant, () => read('/companies', { 'custom_fields_by_name.Budget': { $gte: 2, $lt: 4 } }))
      expect(result.body.total).toBe(2)
      expect(count).toBe(2)
    })

    it('when contacts are searched by name, e-mail or phone, then each search is one statement', async () => {
      for (const body of [{ searchTerm: 'person 3', searchIn: 'name' }, { searchTerm: 'count', searchIn: 'email' }, { searchTerm: '600000', searchIn: 'phone', phone_country_code: '+1', phone_country_iso: 'US' }]) {
        const { result, count } = await statementsOf(pages.tenant, () => post(pages.tenant, '/contacts', body, 'search'))
        expect(result.status, JSON.stringify(result.body)).toBe(200)
        expect(count, body.searchIn).toBe(1)
      }
    })

    it('when duplicates are found, then two statements, for a page of one group as for a page of all', async () => {
      const tenant = await createTenant(t, 'Duplicates')
      for (const first_name of ['Ann', 'Ann', 'Bob', 'Bob', 'Cid', 'Cid']) expect((await post(tenant, '/contacts', { first_name, last_name: 'Twin' })).status).toBe(201)
      await keyAtRest(tenant)
      const one = await statementsOf(tenant, () => post(tenant, '/contacts', { searchIn: 'name', $limit: 1 }, 'find-duplicates'))
      const all = await statementsOf(tenant, () => post(tenant, '/contacts', { searchIn: 'name', $limit: 10 }, 'find-duplicates'))
      expect(all.result.body.groups).toHaveLength(3)
      expect([one.count, all.count]).toEqual([2, 2])
    })

    it('when an internal call puts an undeclared column in an $or branch, then it is refused before any statement', async () => {
      const { result, count } = await countQueries(t.app.get('knex'), () =>
        (t.app.service('contacts') as any)._find({ query: { organization_id: pages.tenant.organization.id, $or: [{ first_name: 'x' }, { no_such_column: 1 }] } }).catch((error: unknown) => error))
      expect(result).toMatchObject({ name: 'BadRequest' })
      expect(count).toBe(0)
    })

    it('when a new key is used twice in a row, then the first request also reads the key and records its use, and the second is its page alone', async () => {
      const key = await keyFor(t, pages.tenant, pages.tenant.user.id)
      const first = await countQueries(t.app.get('knex'), () => t.http().get('/companies').set(key))
      const second = await countQueries(t.app.get('knex'), () => t.http().get('/companies').set(key))
      expect([first.result.status, second.result.status]).toEqual([200, 200])
      expect([first.count, second.count]).toEqual([3, 1])
    })
  })

  describe('writes', () => {
    let tenant: Tenant
    let company: number
    const created = async (path: string, body: unknown) => {
      const res = await post(tenant, path, body)
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201)
      return res.body
    }

    beforeAll(async () => {
      tenant = await createTenant(t, 'Writes')
      company = (await created('/companies', { name: 'Counted' })).id
      await created('/custom-fields', { entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
      await keyAtRest(tenant)
    })

    it('when a contact is created or patched, then each write is one statement that checks its references and answers the record; a delete also checks for subscribers first', async () => {
      const create = await statementsOf(tenant, () => post(tenant, '/contacts', { first_name: 'Ada', company_id: company, owned_by_user_id: tenant.user.id }))
      expect(create.result.status, JSON.stringify(create.result.body)).toBe(201)
      const id = create.result.body.id
      const patch = await statementsOf(tenant, () => t.http().patch(`/contacts/${id}`).set(tenant.key).send({ last_name: 'Lovelace', company_id: null }))
      expect(patch.result.body).toMatchObject({ last_name: 'Lovelace', company_id: null })
      const remove = await statementsOf(tenant, () => t.http().delete(`/contacts/${id}`).set(tenant.key))
      expect(remove.result.status).toBe(200)
      expect([create.count, patch.count, remove.count]).toEqual([1, 1, 2])
    })

    it('when an activity is created, then two statements: whether anybody subscribed to its event, then the insert', async () => {
      const { result, count } = await statementsOf(tenant, () => post(tenant, '/activities', { subject: 'Call back', activity_type: 'call' }))
      expect(result.status).toBe(201)
      expect(count).toBe(2)
    })

    it('when 10 or 100 contacts with a company and custom values are created in a batch, then four statements: the subscriber, reference and field-definition checks, then one insert', async () => {
      const batch = (n: number, label: string) => Array.from({ length: n }, (_v, i) => ({ first_name: `${label} ${i}`, company_id: company, owned_by_user_id: tenant.user.id, custom_fields_by_name: { Budget: i } }))
      const ten = await statementsOf(tenant, () => post(tenant, '/contacts', batch(10, 'Ten')))
      const hundred = await statementsOf(tenant, () => post(tenant, '/contacts', batch(100, 'Hundred')))
      expect(hundred.result.body).toHaveLength(100)
      expect([ten.count, hundred.count]).toEqual([4, 4])
    })

    it('when 10 or 100 deals on one stage, or activities of one custom type, are created in a batch, then the statements do not grow with the batch', async () => {
      const board = (await created('/pipelines', { name: 'Batch' }))
      const stage = await created('/pipeline-stages', { pipeline_id: board.id, name: 'Open', position: 0 })
      await created('/activity-types', { name: 'Demo' })
      const deals = (n: number) => Array.from({ length: n }, (_v, i) => ({ name: `Deal ${i}`, amount: i, currency: 'EUR', status: i % 2 ? 'won' : 'open', pipeline_id: board.id, pipeline_stage_id: stage.id }))
      const activities = (n: number) => Array.from({ length: n }, (_v, i) => ({ subject: `Demo ${i}`, activity_type: i % 2 ? 'demo' : 'Demo' }))
      for (const [path, make] of [['/deals', deals], ['/activities', activities]] as const) {
        const ten = await statementsOf(tenant, () => post(tenant, path, make(10)))
        const hundred = await statementsOf(tenant, () => post(tenant, path, make(100)))
        expect(hundred.result.status, JSON.stringify(hundred.result.body).slice(0, 300)).toBe(201)
        expect(hundred.count, path).toBe(ten.count)
      }
    })

    it('when 10 or 100 contacts are upserted by e-mail, then seven statements, the same for both, not one per record', async () => {
      const records = (n: number, label: string) => Array.from({ length: n }, (_v, i) => ({ first_name: `${label} ${i}`, email: `${label}-${i}@count.test`, custom_fields_by_name: { Budget: i } }))
      await created('/contacts', records(50, 'hundred'))
      const ten = await statementsOf(tenant, () => post(tenant, '/contacts', { idProperty: 'email', records: records(10, 'ten') }, 'upsert'))
      const hundred = await statementsOf(tenant, () => post(tenant, '/contacts', { idProperty: 'email', records: records(100, 'hundred') }, 'upsert'))
      expect(hundred.result.body).toMatchObject({ created: 50, updated: 50 })
      expect([ten.count, hundred.count]).toEqual([7, 7])
    })

    it('when activities are completed in bulk, then two statements: whether anybody subscribed, then the one update', async () => {
      const made: { id: number }[] = []
      for (let i = 0; i < 3; i++) made.push(await created('/activities', { subject: `Bulk ${i}`, activity_type: 'call' }))
      const { result, count } = await statementsOf(tenant, () => t.http().patch('/activities').set(tenant.key).send({ ids: made.map((a) => a.id), done: true }))
      expect(result.body.updated).toBe(3)
      expect(count).toBe(2)
    })

    describe('when somebody subscribed to the events', () => {
      let subscribed: Tenant

      beforeAll(async () => {
        subscribed = await createTenant(t, 'Subscribed')
        t.app.set('webhookAllowPrivate', true)
        const subscription = await post(subscribed, '/webhook-subscriptions', { url: 'http://127.0.0.1:9/hooks', events: ['contacts.created', 'activities.updated'] })
        expect(subscription.status, JSON.stringify(subscription.body)).toBe(201)
        await keyAtRest(subscribed)
      })
      afterAll(() => {
        t.app.set('webhookAllowPrivate', false)
      })

      it('when a contact is created, then its guarded insert writes nothing and the write goes again in a transaction with its delivery and job: eight statements', async () => {
        const { result, count } = await statementsOf(subscribed, () => post(subscribed, '/contacts', { first_name: 'Ned' }))
        expect(result.status).toBe(201)
        expect(count).toBe(8)
      })

      it('when one or six activities are completed in bulk, then the statements are as many for six as for one', async () => {
        const made: { id: number }[] = []
        for (let i = 0; i < 7; i++) made.push((await post(subscribed, '/activities', { subject: `Bulk ${i}`, activity_type: 'call' })).body)
        const complete = (activities: { id: number }[]) => statementsOf(subscribed, () => t.http().patch('/activities').set(subscribed.key).send({ ids: activities.map((a) => a.id), done: true }))
        const one = await complete(made.slice(0, 1))
        const six = await complete(made.slice(1))
        expect([one.result.body.updated, six.result.body.updated]).toEqual([1, 6])
        expect(six.count).toBe(one.count)
      })
    })
  })

  describe('background', () => {
    it('when 16 sockets hold three credentials of two kinds, then a check of them all is one statement per kind, on the background knex', async () => {
      const member = await createTenant(t, 'Sockets')
      const [key] = await t.db('api_keys').where({ organization_id: pages.tenant.organization.id }).select('id')
      const now = Math.floor(Date.now() / 1000)
      const sockets: Connection[] = []
      for (let i = 0; i < 8; i++) {
        sockets.push({
          caller: { userId: pages.tenant.user.id, apiKeyOrganizationId: pages.tenant.organization.id, apiKeyId: key.id, roles: new Map([[pages.tenant.organization.id, 'owner']]) },
          credentials: [{ kind: 'api-key', organization_id: pages.tenant.organization.id, id: key.id }]
        })
        const owner = i % 2 ? pages.tenant : member
        sockets.push({
          caller: { userId: owner.user.id, roles: new Map([[owner.organization.id, 'owner']]) },
          credentials: [{ kind: 'jwt', userId: owner.user.id, payload: { iat: now, exp: now + 3600 } }]
        })
      }
      const credentials = new SocketCredentials(t.app)
      for (const socket of sockets) credentials.track(socket)
      const ended: Connection[] = []
      const onDisconnect = (connection: Connection) => ended.push(connection)
      t.app.on('disconnect', onDisconnect)
      // The outbox worker, woken by the writes before, uses the background knex too: stopped while this counts.
      await t.app.get('outbox').stop()
      try {
        const { count } = await countQueries(t.app.get('backgroundKnex'), () => credentials.sweep())
        expect(ended).toEqual([])
        expect(count).toBe(2)
      } finally {
        t.app.get('outbox').start()
        t.app.removeListener('disconnect', onDisconnect)
      }
    })
  })
})
