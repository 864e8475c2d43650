import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline } from './deal-fixtures.js'
import { at, created, inDays, link, resourceWithHours } from '../reservations/fixtures.js'
import { connectWebchat } from '../channels/fixtures.js'

/** Duplicate contacts: find-duplicates groups them, merge folds them into one. */
describe('contact duplicates and merge', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const contact = (tenant: Tenant, body: Record<string, unknown>) => created(t, tenant, '/contacts', body)
  const duplicates = (tenant: Tenant, body: Record<string, unknown>) =>
    t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'find-duplicates').send(body)
  const merge = (tenant: Tenant, body: Record<string, unknown>) =>
    t.http().post('/contacts').set(tenant.key).set('X-Service-Method', 'merge').send(body)

  describe('find-duplicates', () => {
    let tenant: Tenant
    let ids: Record<string, number>

    beforeAll(async () => {
      tenant = await createTenant(t, 'Dupes')
      ids = {
        ada1: (await contact(tenant, { first_name: 'Ada', last_name: 'Lovelace', email: 'ADA@example.test', phone: '+44 20 7946 0958', phone_country_code: '+44' })).id,
        ada2: (await contact(tenant, { first_name: 'ada', last_name: 'Lovelace', email: 'ada@example.test', phone: '20 7946 0958', phone_country_code: '+44' })).id,
        ada3: (await contact(tenant, { first_name: 'Adá', last_name: 'LOVELACE' })).id,
        bob1: (await contact(tenant, { first_name: 'Bob', email: 'bob@example.test' })).id,
        bob2: (await contact(tenant, { first_name: 'Robert', email: 'Bob@Example.test' })).id,
        solo: (await contact(tenant, { first_name: 'Solo', email: 'solo@example.test' })).id
      }
      const deleted = await contact(tenant, { first_name: 'Gone', email: 'solo@example.test' })
      await t.http().delete(`/contacts/${deleted.id}`).set(tenant.key).expect(200)
      // The same e-mail in another organization does not make a group here.
      await contact(other, { first_name: 'Elsewhere', email: 'solo@example.test' })
    })

    it('when duplicates are searched by e-mail, then groups of live contacts sharing it (any case) come with their contacts', async () => {
      const res = await duplicates(tenant, { searchIn: 'email' })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.groups).toEqual([
        { value: 'ada@example.test', count: 2, contact_ids: [ids.ada1, ids.ada2] },
        { value: 'bob@example.test', count: 2, contact_ids: [ids.bob1, ids.bob2] }
      ])
      expect(res.body).toMatchObject({ total: 2, limit: 10, skip: 0 })
      expect(res.body.data.map((c: any) => c.id)).toEqual([ids.ada1, ids.ada2, ids.bob1, ids.bob2])
      // Contacts as the API shows them: no storage columns.
      expect(res.body.data[0]).not.toHaveProperty('custom_fields')
      expect(res.body.data[0]).toHaveProperty('custom_fields_by_name')
    })

    it('when duplicates are searched by phone or name, then they compare as search does', async () => {
      const phone = await duplicates(tenant, { searchIn: 'phone' })
      expect(phone.body.groups).toEqual([{ value: '+442079460958', count: 2, contact_ids: [ids.ada1, ids.ada2] }])
      const name = await duplicates(tenant, { searchIn: 'name' })
      expect(name.body.groups).toEqual([{ value: 'ada lovelace', count: 3, contact_ids: [ids.ada1, ids.ada2, ids.ada3] }])
    })

    it('when the groups are paged, then $limit and $skip page the groups and total counts them all', async () => {
      const second = await duplicates(tenant, { searchIn: 'email', $limit: 1, $skip: 1 })
      expect(second.body).toMatchObject({ total: 2, limit: 1, skip: 1 })
      expect(second.body.groups.map((g: any) => g.value)).toEqual(['bob@example.test'])
      const past = await duplicates(tenant, { searchIn: 'email', $skip: 5 })
      expect(past.body).toMatchObject({ total: 2, groups: [], data: [] })
    })

    it('when searchIn is missing or unknown, or another organization is named, then 400 or 403', async () => {
      expect((await duplicates(tenant, {})).body.errors).toHaveProperty('searchIn')
      expect((await duplicates(tenant, { searchIn: 'website' })).status).toBe(400)
      expect((await duplicates(tenant, { searchIn: 'email', $limit: 500 })).status).toBe(400)
      expect((await duplicates(tenant, { searchIn: 'email', organization_id: other.organization.id })).status).toBe(403)
    })
  })

  describe('merge', () => {
    it('when two duplicate contacts without channel identities are merged, then their records move to the primary, its empty fields are filled and the duplicate is deleted', async () => {
      await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'source', name: 'Source', field_type: 'text' }).expect(201)
      await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'score', name: 'Score', field_type: 'number' }).expect(201)
      const company = await created(t, acme, '/companies', { name: 'Initech' })
      const primary = await contact(acme, { first_name: 'Grace', email: 'grace@example.test', custom_fields_by_name: { Source: 'web' } })
      const duplicate = await contact(acme, {
        first_name: 'Grace', last_name: 'Hopper', email: 'g.hopper@example.test', avatar_url: 'https://example.test/grace.png',
        company_id: company.id, custom_fields_by_name: { Source: 'import', Score: 7 }
      })
      const board = await createPipeline(t, acme)
      const deal = await createDeal(t, acme, board, { contact_id: duplicate.id })
      const activity = await created(t, acme, '/activities', { subject: 'Call', contact_id: duplicate.id })
      const conversation = await created(t, acme, '/conversations', { channel: 'playground', contact_id: duplicate.id })
      const service = await created(t, acme, '/reservation-services', { name: 'Consult', duration_minutes: 60, max_advance_days: 400 })
      const resource = await resourceWithHours(t, acme, { name: 'Room' }, [['09:00', '13:00']])
      await link(t, acme, service.id, resource.id)
      const reservation = await created(t, acme, '/reservations', { service_id: service.id, contact_id: duplicate.id, start_datetime: at(inDays(3), '10:00') })

      const events: [string, number][] = []
      const listen = (path: string) => (event: string) => (row: any) => events.push([`${path} ${event}`, row.id])
      t.app.service('contacts').on('removed', listen('contacts')('removed'))
      t.app.service('contacts').on('patched', listen('contacts')('patched'))
      t.app.service('deals').on('patched', listen('deals')('patched'))

      const res = await merge(acme, { primary_id: primary.id, duplicate_ids: [duplicate.id] })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({
        id: primary.id, first_name: 'Grace', email: 'grace@example.test', last_name: 'Hopper', avatar_url: 'https://example.test/grace.png',
        company_id: company.id, custom_fields_by_name: { Source: 'web', Score: 7 }
      })
      expect(res.body).not.toHaveProperty('custom_fields')

      const read = await t.http().get(`/contacts/${primary.id}`).set(acme.key)
      expect(read.body).toEqual(res.body)
      expect((await t.http().get(`/contacts/${duplicate.id}`).set(acme.key)).status).toBe(404)
      for (const [path, record] of [['/deals', deal], ['/activities', activity], ['/conversations', conversation], ['/reservations', reservation]] as const) {
        const moved = await t.http().get(`${path}/${record.id}`).set(acme.key)
        expect(moved.status, path).toBe(200)
        expect(moved.body.contact_id, path).toBe(primary.id)
        expect(Date.parse(moved.body.updated_at), path).toBeGreaterThan(Date.parse(record.updated_at))
      }
      // A sync client sees the duplicate's deletion.
      const sync = await t.http().get('/contacts').set(acme.key).send({ query: { id: duplicate.id, $withDeleted: true } })
      expect(sync.body.data[0].deleted_at).toEqual(expect.any(String))
      expect(events).toEqual(expect.arrayContaining([['contacts removed', duplicate.id], ['contacts patched', primary.id], ['deals patched', deal.id]]))
    })

    it('when the primary already has a value, then it keeps it; duplicates fill in the order given', async () => {
      const primary = await contact(acme, { first_name: 'Keep', last_name: 'Mine' })
      const first = await contact(acme, { first_name: 'A', last_name: 'Theirs', email: 'first@example.test' })
      const second = await contact(acme, { first_name: 'B', email: 'second@example.test', avatar_url: 'https://example.test/b.png' })
      const res = await merge(acme, { primary_id: primary.id, duplicate_ids: [second.id, first.id] })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ first_name: 'Keep', last_name: 'Mine', email: 'second@example.test', avatar_url: 'https://example.test/b.png' })
      for (const id of [first.id, second.id]) expect((await t.http().get(`/contacts/${id}`).set(acme.key)).status).toBe(404)
    })

    it("when a duplicate belongs to another organization or is already deleted, then 404 naming it and nothing changes", async () => {
      const primary = await contact(acme, { first_name: 'Primary' })
      const mine = await contact(acme, { first_name: 'Mine', email: 'mine@example.test' })
      const board = await createPipeline(t, acme)
      const deal = await createDeal(t, acme, board, { contact_id: mine.id })
      const theirs = await contact(other, { first_name: 'Theirs' })
      const foreign = await merge(acme, { primary_id: primary.id, duplicate_ids: [mine.id, theirs.id] })
      expect(foreign.status).toBe(404)
      expect(foreign.body.message).toContain(String(theirs.id))
      const gone = await contact(acme, { first_name: 'Gone' })
      await t.http().delete(`/contacts/${gone.id}`).set(acme.key).expect(200)
      expect((await merge(acme, { primary_id: primary.id, duplicate_ids: [mine.id, gone.id] })).status).toBe(404)
      expect((await merge(acme, { primary_id: theirs.id, duplicate_ids: [mine.id] })).status).toBe(404)
      // All or nothing: the deal stayed, the duplicate lives, the primary is unchanged.
      expect((await t.http().get(`/deals/${deal.id}`).set(acme.key)).body.contact_id).toBe(mine.id)
      expect((await t.http().get(`/contacts/${mine.id}`).set(acme.key)).status).toBe(200)
      expect((await t.http().get(`/contacts/${primary.id}`).set(acme.key)).body.email).toBeNull()
      expect((await t.http().get(`/contacts/${theirs.id}`).set(other.key)).status).toBe(200)
    })

    it('when the body is malformed or names another organization, then 400 or 403', async () => {
      const primary = await contact(acme, { first_name: 'P' })
      const cases: [Record<string, unknown>, number][] = [
        [{ primary_id: primary.id }, 400],
        [{ primary_id: primary.id, duplicate_ids: [] }, 400],
        [{ primary_id: primary.id, duplicate_ids: [primary.id] }, 400],
        [{ primary_id: primary.id, duplicate_ids: [5, 5] }, 400],
        [{ primary_id: primary.id, duplicate_ids: ['x'] }, 400],
        [{ primary_id: primary.id, duplicate_ids: [1], organization_id: other.organization.id }, 403],
        [{ primary_id: primary.id, duplicate_ids: [primary.id + 1], keep_identity_from: 'x' }, 400],
        [{ primary_id: primary.id, duplicate_ids: [primary.id + 1], keep_identity_from: primary.id + 2 }, 400]
      ]
      for (const [body, status] of cases) expect((await merge(acme, body)).status, JSON.stringify(body)).toBe(status)
      const self = await merge(acme, { primary_id: primary.id, duplicate_ids: [primary.id] })
      expect(self.body.errors).toEqual({ duplicate_ids: 'must not contain primary_id' })
      const stranger = await merge(acme, { primary_id: primary.id, duplicate_ids: [primary.id + 1], keep_identity_from: primary.id + 2 })
      expect(stranger.body.errors).toEqual({ keep_identity_from: 'must be primary_id or one of duplicate_ids' })
    })
  })

  describe('merge and channel identities', () => {
    let widget: any
    beforeAll(async () => {
      widget = await connectWebchat(t, acme)
    })

    /** A web-chat session as the site's back end signs it for a signed-in user (docs/channels.md). */
    const signedSession = async (userId: string, claims: Record<string, unknown> = {}) => {
      const userHash = crypto.createHmac('sha256', widget.identity_secret).update(userId).digest('hex')
      const res = await t.http().post(`/public/webchat/${widget.widget_token}/sessions`).send({ user_id: userId, user_hash: userHash, ...claims })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      return res.body as { visitor_token: string; conversation_id: number }
    }
    const threadOf = async (visitorToken: string) =>
      (await t.http().get('/public/webchat/messages').set('X-Visitor-Token', visitorToken)).body.data.map((m: any) => m.content)
    const read = async (id: number) => (await t.http().get('/contacts').set(acme.key).send({ query: { id, $withDeleted: true } })).body.data[0]

    /** A customer with a web-chat thread holding the team's private answer, and a signed-in stranger claiming the customer's e-mail. */
    async function claimedCustomer() {
      const email = `victim-${crypto.randomUUID().slice(0, 8)}@example.test`
      const customer = await contact(acme, { first_name: 'Ada', last_name: 'Lovelace', email })
      const conversation = await created(t, acme, '/conversations', { channel: 'webchat', contact_id: customer.id, channel_account_id: widget.id })
      await t.http().post('/conversation-messages-transform-outgoing-webchat').set(acme.key)
        .send({ conversation_id: conversation.id, content: 'Your order 4711 ships to 12 Crescent Road' }).expect(201)
      const userId = `claimant-${crypto.randomUUID()}`
      const session = await signedSession(userId, { name: 'Ada Lovelace', email })
      const claimant = (await t.http().get(`/conversations/${session.conversation_id}`).set(acme.key)).body.contact
      const proposed = await duplicates(acme, { searchIn: 'email' })
      expect(proposed.body.groups).toContainEqual({ value: email, count: 2, contact_ids: [customer.id, claimant.id] })
      return { customer, conversation, userId, claimant }
    }

    it("when a signed-in web-chat user claims a customer's e-mail and the team merges the pair, then 409 naming external_id, nothing changes, and the user's next session stays out of the customer's thread", async () => {
      const { customer, conversation, userId, claimant } = await claimedCustomer()
      const res = await merge(acme, { primary_id: customer.id, duplicate_ids: [claimant.id] })
      expect(res.status, JSON.stringify(res.body)).toBe(409)
      expect(res.body).toMatchObject({ name: 'Conflict', errors: { external_id: expect.stringContaining(String(claimant.id)) } })
      expect(Object.keys(res.body.errors)).toEqual(['external_id'])

      expect(await read(customer.id)).toMatchObject({ external_id: null, deleted_at: null })
      expect(await read(claimant.id)).toMatchObject({ external_id: userId, deleted_at: null })
      const next = await signedSession(userId)
      expect(next.conversation_id).not.toBe(conversation.id)
      expect(await threadOf(next.visitor_token)).toEqual([])
    })

    it("when the caller keeps the primary's identity, then the merge goes through without the duplicate's, and the user's next session gets a contact of its own", async () => {
      const { customer, conversation, userId, claimant } = await claimedCustomer()
      const res = await merge(acme, { primary_id: customer.id, duplicate_ids: [claimant.id], keep_identity_from: customer.id })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ id: customer.id, external_id: null })
      expect(await read(claimant.id)).toMatchObject({ deleted_at: expect.any(String) })

      const next = await signedSession(userId)
      expect(next.conversation_id).not.toBe(conversation.id)
      const nextContact = (await t.http().get(`/conversations/${next.conversation_id}`).set(acme.key)).body.contact_id
      expect(nextContact).not.toBe(customer.id)
      expect(await threadOf(next.visitor_token)).toEqual([])
    })

    it("when the caller keeps a duplicate's identity, then the primary takes its identities and phone where it has them, keeps its own elsewhere, and the duplicate loses them", async () => {
      const primary = await contact(acme, { first_name: 'Grace', channel_whatsapp_wa_id: '4470000001', channel_instagram_user_id: 'ig-grace' })
      const externalId = `grace-${crypto.randomUUID()}`
      const duplicate = await contact(acme, {
        first_name: 'Grace', external_id: externalId, channel_whatsapp_wa_id: '15550100', phone: '+1 212 555 0100', phone_country_code: '+1', phone_country_iso: 'us'
      })
      const other = await contact(acme, { first_name: 'Grace', channel_messenger_user_id: 'psid-other' })
      const res = await merge(acme, { primary_id: primary.id, duplicate_ids: [other.id, duplicate.id], keep_identity_from: duplicate.id })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({
        id: primary.id, external_id: externalId, channel_whatsapp_wa_id: '15550100', channel_instagram_user_id: 'ig-grace', channel_messenger_user_id: null,
        phone: '+1 212 555 0100', phone_country_code: '+1', phone_country_iso: 'US'
      })
      expect((await t.http().get(`/contacts/${primary.id}`).set(acme.key)).body).toEqual(res.body)
      expect(await read(duplicate.id)).toMatchObject({ external_id: null, channel_whatsapp_wa_id: null, phone: null, phone_country_code: null, deleted_at: expect.any(String) })
      expect(await read(other.id)).toMatchObject({ channel_messenger_user_id: 'psid-other', deleted_at: expect.any(String) })
      // Phone search finds the primary under the phone it took over; the external id names it.
      const byPhone = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'search')
        .send({ searchIn: 'phone', searchTerm: '5550100', phone_country_code: '+1', phone_country_iso: 'US' })
      expect(byPhone.body.data.map((c: any) => c.id)).toEqual([primary.id])
      expect((await t.http().get('/contacts').set(acme.key).query({ external_id: externalId })).body.data.map((c: any) => c.id)).toEqual([primary.id])
    })

    it('when duplicates hold phones or channel ids other than the primary\'s, then 409 names each such field; the same phone written otherwise is no conflict', async () => {
      const primary = await contact(acme, { first_name: 'Linus', channel_whatsapp_wa_id: '4470000002', phone: '+44 20 7946 0958', phone_country_code: '+44' })
      const samePhone = await contact(acme, { first_name: 'Linus', phone: '20 7946 0958', phone_country_code: '+44', channel_whatsapp_wa_id: '4470000002' })
      expect((await merge(acme, { primary_id: primary.id, duplicate_ids: [samePhone.id] })).status).toBe(200)

      const others = [
        await contact(acme, { first_name: 'Linus', channel_whatsapp_wa_id: '4470000003', channel_messenger_user_id: 'psid-linus' }),
        await contact(acme, { first_name: 'Linus', phone: '+44 20 7946 1111', phone_country_code: '+44', channel_whatsapp_user_id: 'US.bsuid', channel_instagram_user_id: 'ig-linus' })
      ]
      const res = await merge(acme, { primary_id: primary.id, duplicate_ids: others.map((c) => c.id) })
      expect(res.status, JSON.stringify(res.body)).toBe(409)
      expect(Object.keys(res.body.errors).sort()).toEqual(['channel_instagram_user_id', 'channel_messenger_user_id', 'channel_whatsapp_user_id', 'channel_whatsapp_wa_id', 'phone'])
      for (const duplicate of others) expect(await read(duplicate.id)).toMatchObject({ deleted_at: null })
      expect(await read(primary.id)).toMatchObject({ channel_whatsapp_wa_id: '4470000002', channel_messenger_user_id: null, phone: '+44 20 7946 0958' })
    })

    it('when the OpenAPI document is read, then the merge method describes keep_identity_from and its 409 with the errors it names', async () => {
      const doc = (await t.http().get('/openapi.json')).body
      expect(doc.components.schemas.ContactMerge.properties.keep_identity_from.description).toContain('primary_id or one of duplicate_ids')
      const conflict = doc.paths['/contacts#merge'].post.responses['409']
      expect(conflict.description).toContain('keep_identity_from')
      expect(conflict.content['application/json'].example).toMatchObject({ name: 'Conflict', errors: { external_id: expect.any(String) } })
    })

    it("when keep_identity_from names another organization's contact, then 400 and nothing changes", async () => {
      const primary = await contact(acme, { first_name: 'Edsger' })
      const duplicate = await contact(acme, { first_name: 'Edsger', external_id: `e-${crypto.randomUUID()}` })
      const theirs = await contact(other, { first_name: 'Edsger' })
      const res = await merge(acme, { primary_id: primary.id, duplicate_ids: [duplicate.id], keep_identity_from: theirs.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toHaveProperty('keep_identity_from')
      expect(await read(duplicate.id)).toMatchObject({ deleted_at: null })
    })
  })
})
