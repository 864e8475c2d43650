import { beforeAll, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, createBoard, createContact, createConversation, inAnHour } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('conversations', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const read = async (tenant: Tenant, id: number) => (await t.http().get(`/conversations/${id}`).set(tenant.key)).body
  const patch = (tenant: Tenant, id: number, body: Record<string, unknown>) => t.http().patch(`/conversations/${id}`).set(tenant.key).send(body)

  describe('opening', () => {
    it('when a conversation is opened with a channel and a contact, then 201 with the defaults, joined to contact, assignees and stage as a read is', async () => {
      const contact = await createContact(t, acme, { email: 'marie@example.test', phone: '+33 1 23 45 67 89' })
      const res = await t.http().post('/conversations').set(acme.key).send({ channel: 'whatsapp', contact_id: contact.id })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, channel: 'whatsapp', contact_id: contact.id,
        channel_account_id: null, status: 'open', snoozed_until: null, assignee_user_ids: [], pipeline_id: null,
        pipeline_stage_id: null, unread_count: 0, is_blocked: false,
        ai_context: { enabled: false, paused_until: null, summary: null, variables: {} },
        last_message_at: null, last_message_preview: null, last_inbound_at: null,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null,
        contact: { id: contact.id, first_name: 'Marie', last_name: 'Curie', email: 'marie@example.test', phone: '+33 1 23 45 67 89', avatar_url: null },
        assignees: [],
        pipeline_stage: null
      })
      expect(await read(acme, res.body.id)).toEqual(res.body)
    })

    it('when it is opened with patchable fields (assignees, unread, AI context, a stage), then they are stored', async () => {
      const member = await addMember(t, acme)
      const { pipeline, stages } = await createBoard(t, acme)
      const conversation = await createConversation(t, acme, {
        channel: 'sms', assignee_user_ids: [member.user.id, acme.user.id, member.user.id], unread: true,
        ai_context: { enabled: true, variables: { tone: 'warm' } }, pipeline_id: pipeline.id, pipeline_stage_id: stages[1].id
      })
      const stored = await read(acme, conversation.id)
      expect(stored).toMatchObject({
        channel: 'sms', assignee_user_ids: [member.user.id, acme.user.id], unread_count: 1,
        ai_context: { enabled: true, paused_until: null, summary: null, variables: { tone: 'warm' } },
        pipeline_id: pipeline.id, pipeline_stage_id: stages[1].id, pipeline_stage: { id: stages[1].id, name: 'Qualified' }
      })
      expect(stored.assignees).toEqual([
        { id: member.user.id, first_name: 'Grace', last_name: 'Hopper' },
        { id: acme.user.id, first_name: 'Ada', last_name: 'Lovelace' }
      ])
    })

    it.each([
      [{ channel: 'telegram' }, 'channel'],
      [{ channel: 'sms', contact_id: undefined }, 'contact_id'],
      [{ channel: 'sms', last_message_at: '2026-01-01T00:00:00.000Z' }, 'last_message_at'],
      [{ channel: 'sms', unread_count: 3 }, 'unread_count'],
      [{ channel: 'sms', status: 'archived' }, 'status']
    ])('when the body is %j, then 400 with errors.%s', async (body, field) => {
      const contact = await createContact(t, acme)
      const res = await t.http().post('/conversations').set(acme.key).send({ contact_id: contact.id, ...body })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([field])
    })

    it("when the contact is another organization's or deleted, then 400 errors.contact_id and nothing is opened", async () => {
      const foreign = await createContact(t, globex)
      const before = await t.db('conversations').where({ organization_id: acme.organization.id }).count({ n: '*' })
      const res = await t.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: foreign.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ contact_id: 'must be a contact of this organization' })
      const deleted = await createContact(t, acme)
      await t.http().delete(`/contacts/${deleted.id}`).set(acme.key).expect(200)
      const gone = await t.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: deleted.id })
      expect(gone.body.errors).toEqual({ contact_id: 'must be a contact of this organization' })
      const after = await t.db('conversations').where({ organization_id: acme.organization.id }).count({ n: '*' })
      expect(after).toEqual(before)
    })
  })

  describe('status and snooze', () => {
    it("when status 'snoozed' comes without snoozed_until or with a past one, then 400 errors.snoozed_until and the status stays", async () => {
      const conversation = await createConversation(t, acme)
      const missing = await patch(acme, conversation.id, { status: 'snoozed' })
      expect(missing.status).toBe(400)
      expect(Object.keys(missing.body.errors)).toEqual(['snoozed_until'])
      const past = await patch(acme, conversation.id, { status: 'snoozed', snoozed_until: '2020-01-01T00:00:00.000Z' })
      expect(past.status).toBe(400)
      expect(past.body.errors).toEqual({ snoozed_until: 'must be in the future' })
      const alone = await patch(acme, conversation.id, { snoozed_until: inAnHour() })
      expect(alone.status).toBe(400)
      expect((await read(acme, conversation.id)).status).toBe('open')
    })

    it('when snoozed until a future time, then stored; resolved clears snoozed_until; open again moves freely', async () => {
      const conversation = await createConversation(t, acme)
      const until = inAnHour()
      const snoozed = await patch(acme, conversation.id, { status: 'snoozed', snoozed_until: until })
      expect(snoozed.status, JSON.stringify(snoozed.body)).toBe(200)
      expect(await read(acme, conversation.id)).toMatchObject({ status: 'snoozed', snoozed_until: until })
      const later = new Date(Date.now() + 7_200_000).toISOString()
      await patch(acme, conversation.id, { snoozed_until: later }).expect(200)
      expect((await read(acme, conversation.id)).snoozed_until).toBe(later)
      await patch(acme, conversation.id, { status: 'resolved' }).expect(200)
      expect(await read(acme, conversation.id)).toMatchObject({ status: 'resolved', snoozed_until: null })
      await patch(acme, conversation.id, { status: 'open' }).expect(200)
      expect((await read(acme, conversation.id)).status).toBe('open')
    })
  })

  describe('patchable fields', () => {
    it('when assignees include a user who is not a member (or is a member elsewhere), then 400 errors.assignee_user_ids and nothing changes', async () => {
      const conversation = await createConversation(t, acme)
      const res = await patch(acme, conversation.id, { assignee_user_ids: [acme.user.id, globex.user.id] })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ assignee_user_ids: `must be members of this organization (not: ${globex.user.id})` })
      expect((await read(acme, conversation.id)).assignee_user_ids).toEqual([])
      await patch(acme, conversation.id, { assignee_user_ids: [acme.user.id] }).expect(200)
      expect((await read(acme, conversation.id)).assignees).toEqual([{ id: acme.user.id, first_name: 'Ada', last_name: 'Lovelace' }])
      await patch(acme, conversation.id, { assignee_user_ids: [] }).expect(200)
      expect((await read(acme, conversation.id)).assignees).toEqual([])
    })

    it('when ai_context is patched, then the fields sent replace theirs and variables merge key by key', async () => {
      const conversation = await createConversation(t, acme, { ai_context: { variables: { tone: 'warm', lang: 'fr' } } })
      await patch(acme, conversation.id, { ai_context: { enabled: true, summary: 'Wants a refund' } }).expect(200)
      await patch(acme, conversation.id, { ai_context: { variables: { lang: 'en', order: 42 }, paused_until: '2030-01-01T10:00:00Z' } }).expect(200)
      expect((await read(acme, conversation.id)).ai_context).toEqual({
        enabled: true, summary: 'Wants a refund', paused_until: '2030-01-01T10:00:00.000Z', variables: { tone: 'warm', lang: 'en', order: 42 }
      })
      const wrong = await patch(acme, conversation.id, { ai_context: { enabled: 'yes' } })
      expect(wrong.status).toBe(400)
      expect(Object.keys(wrong.body.errors)).toEqual(['ai_context.enabled'])
    })

    it('when unread is false, then unread_count is 0; when true, then at least 1', async () => {
      const conversation = await createConversation(t, acme)
      await patch(acme, conversation.id, { unread: true }).expect(200)
      expect((await read(acme, conversation.id)).unread_count).toBe(1)
      await patch(acme, conversation.id, { unread: true }).expect(200)
      expect((await read(acme, conversation.id)).unread_count).toBe(1)
      await patch(acme, conversation.id, { unread: false }).expect(200)
      expect((await read(acme, conversation.id)).unread_count).toBe(0)
    })

    it('when blocked and unblocked, then is_blocked follows', async () => {
      const conversation = await createConversation(t, acme)
      await patch(acme, conversation.id, { is_blocked: true }).expect(200)
      expect((await read(acme, conversation.id)).is_blocked).toBe(true)
      await patch(acme, conversation.id, { is_blocked: false }).expect(200)
      expect((await read(acme, conversation.id)).is_blocked).toBe(false)
    })

    it("when moved to a deal pipeline, another pipeline's stage, or another organization's board, then 400 naming the field; a conversation board's stage is taken", async () => {
      const conversation = await createConversation(t, acme)
      const board = await createBoard(t, acme)
      const other = await createBoard(t, acme)
      const deals = await createBoard(t, acme, 'deal')
      const foreign = await createBoard(t, globex)
      const dealPipeline = await patch(acme, conversation.id, { pipeline_id: deals.pipeline.id, pipeline_stage_id: deals.stages[0].id })
      expect(dealPipeline.body.errors).toEqual({ pipeline_id: 'must be a conversation pipeline of this organization' })
      const wrongStage = await patch(acme, conversation.id, { pipeline_id: board.pipeline.id, pipeline_stage_id: other.stages[0].id })
      expect(wrongStage.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the conversation's pipeline" })
      const crossTenant = await patch(acme, conversation.id, { pipeline_id: foreign.pipeline.id, pipeline_stage_id: foreign.stages[0].id })
      expect(crossTenant.status).toBe(400)
      expect(Object.keys(crossTenant.body.errors)).toEqual(['pipeline_id'])
      const foreignStage = await patch(acme, conversation.id, { pipeline_id: board.pipeline.id, pipeline_stage_id: foreign.stages[0].id })
      expect(foreignStage.body.errors).toEqual({ pipeline_stage_id: "must be a stage of the conversation's pipeline" })
      const noStage = await patch(acme, conversation.id, { pipeline_id: board.pipeline.id })
      expect(Object.keys(noStage.body.errors)).toEqual(['pipeline_stage_id'])
      expect((await read(acme, conversation.id)).pipeline_id).toBeNull()

      await patch(acme, conversation.id, { pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id }).expect(200)
      await patch(acme, conversation.id, { pipeline_stage_id: board.stages[1].id }).expect(200)
      expect(await read(acme, conversation.id)).toMatchObject({
        pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[1].id, pipeline_stage: { id: board.stages[1].id, name: 'Qualified' }
      })
      const alone = await patch(acme, conversation.id, { pipeline_stage_id: other.stages[0].id })
      expect(alone.status).toBe(400)
      await patch(acme, conversation.id, { pipeline_id: null }).expect(200)
      expect(await read(acme, conversation.id)).toMatchObject({ pipeline_id: null, pipeline_stage_id: null, pipeline_stage: null })
    })

    it.each([
      [{ channel: 'sms' }, 'channel'],
      [{ contact_id: 1 }, 'contact_id'],
      [{ unread_count: 5 }, 'unread_count'],
      [{ last_message_preview: 'x' }, 'last_message_preview'],
      [{ organization_id: 1 }, 'organization_id']
    ])('when a patch sends %j, then 400 with errors.%s: nothing else is writable', async (body, field) => {
      const conversation = await createConversation(t, acme)
      const res = await patch(acme, conversation.id, body)
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([field])
    })
  })

  describe('the inbox list', () => {
    let org: Tenant
    let member: Awaited<ReturnType<typeof addMember>>
    const ids: Record<string, number> = {}

    beforeAll(async () => {
      org = await createTenant(t, 'Inbox')
      member = await addMember(t, org)
      const board = await createBoard(t, org)
      const ada = await createContact(t, org, { first_name: 'Ada', last_name: 'Byron', email: 'ada@engines.test', phone: '+44 20 7946 0001' })
      const bob = await createContact(t, org, { first_name: 'Bob', last_name: 'Stone', email: 'bob@quarry.test', phone: '+1 212 555 0100' })
      ids.whatsappMine = (await createConversation(t, org, { channel: 'whatsapp', contact_id: ada.id, assignee_user_ids: [member.user.id] })).id
      ids.smsUnread = (await createConversation(t, org, { channel: 'sms', contact_id: bob.id, unread: true })).id
      ids.staged = (await createConversation(t, org, {
        channel: 'webchat', contact_id: bob.id, pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id,
        assignee_user_ids: [org.user.id, member.user.id]
      })).id
      ids.resolvedBlocked = (await createConversation(t, org, { channel: 'sms', contact_id: ada.id, status: 'resolved', is_blocked: true })).id
      ids.stage = board.stages[0].id
    })

    const list = async (query: Record<string, unknown>) => {
      const res = await t.http().get('/conversations').set(org.key).send({ query })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body
    }
    const idsOf = async (query: Record<string, unknown>) => (await list(query)).data.map((c: any) => c.id).sort((a: number, b: number) => a - b)
    const sorted = (...values: number[]) => [...values].sort((a, b) => a - b)

    it('when filtered by channel, status, contact, stage, blocked or unread, then only the matching threads', async () => {
      expect(await idsOf({ channel: 'sms' })).toEqual(sorted(ids.smsUnread, ids.resolvedBlocked))
      expect(await idsOf({ status: 'resolved' })).toEqual([ids.resolvedBlocked])
      expect(await idsOf({ status: { $in: ['open', 'pending'] } })).toEqual(sorted(ids.whatsappMine, ids.smsUnread, ids.staged))
      expect(await idsOf({ pipeline_stage_id: ids.stage })).toEqual([ids.staged])
      expect(await idsOf({ is_blocked: true })).toEqual([ids.resolvedBlocked])
      expect(await idsOf({ unread: true })).toEqual([ids.smsUnread])
      expect(await idsOf({ unread: false })).toEqual(sorted(ids.whatsappMine, ids.staged, ids.resolvedBlocked))
      const byQueryString = await t.http().get('/conversations').query({ unread: 'true', channel: 'sms' }).set(org.key)
      expect(byQueryString.body.data.map((c: any) => c.id)).toEqual([ids.smsUnread])
    })

    it('when filtered by assignee or unassigned, then by array containment', async () => {
      expect(await idsOf({ assignee_user_id: member.user.id })).toEqual(sorted(ids.whatsappMine, ids.staged))
      expect(await idsOf({ assignee_user_id: org.user.id })).toEqual([ids.staged])
      expect(await idsOf({ unassigned: true })).toEqual(sorted(ids.smsUnread, ids.resolvedBlocked))
      expect(await idsOf({ unassigned: false, channel: 'webchat' })).toEqual([ids.staged])
    })

    it('when searched by contact name, e-mail or phone digits, then the threads of matching contacts; a 1-character term is a 400', async () => {
      expect(await idsOf({ searchTerm: 'byro' })).toEqual(sorted(ids.whatsappMine, ids.resolvedBlocked))
      expect(await idsOf({ searchTerm: 'QUARRY' })).toEqual(sorted(ids.smsUnread, ids.staged))
      expect(await idsOf({ searchTerm: '7946' })).toEqual(sorted(ids.whatsappMine, ids.resolvedBlocked))
      expect(await idsOf({ searchTerm: 'byro', status: 'open' })).toEqual([ids.whatsappMine])
      expect((await list({ searchTerm: 'zzzz' })).total).toBe(0)
      const short = await t.http().get('/conversations').set(org.key).send({ query: { searchTerm: 'b' } })
      expect(short.status).toBe(400)
      expect(Object.keys(short.body.errors)).toEqual(['searchTerm'])
    })

    it('when listed with fastJoinForConversationList, then each row has contact and assignees; without it, neither', async () => {
      const joined = await list({ fastJoinForConversationList: true, id: ids.staged })
      expect(joined.data[0].contact).toMatchObject({ first_name: 'Bob', email: 'bob@quarry.test' })
      expect(joined.data[0].assignees.map((a: any) => a.id)).toEqual([org.user.id, member.user.id])
      const plain = await list({ id: ids.staged })
      expect(plain.data[0]).not.toHaveProperty('contact')
      expect(plain.data[0]).not.toHaveProperty('assignees')
    })

    it('when $limit is above 50, then the page holds at most 50 and says so', async () => {
      const res = await list({ $limit: 500 })
      expect(res.limit).toBe(50)
      expect(res.total).toBe(4)
    })

    it('when a filter is unknown, then 400', async () => {
      const res = await t.http().get('/conversations').set(org.key).send({ query: { assignee_user_ids: 1 } })
      expect(res.status).toBe(400)
    })
  })

  describe('deleting', () => {
    it('when a conversation is deleted, then it comes back with deleted_at, is gone from reads and lists, and cannot be patched', async () => {
      const conversation = await createConversation(t, acme)
      const removed = await t.http().delete(`/conversations/${conversation.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toBe(removed.body.updated_at)
      expect((await t.http().get(`/conversations/${conversation.id}`).set(acme.key)).status).toBe(404)
      const list = await t.http().get('/conversations').set(acme.key).send({ query: { id: conversation.id } })
      expect(list.body.total).toBe(0)
      expect((await patch(acme, conversation.id, { status: 'resolved' })).status).toBe(404)
    })
  })

  describe('other organizations', () => {
    it("when another organization's conversation is read, patched or deleted by id, then 404; naming its organization, then 403", async () => {
      const foreign = await createConversation(t, globex)
      expect((await t.http().get(`/conversations/${foreign.id}`).set(acme.key)).status).toBe(404)
      expect((await patch(acme, foreign.id, { status: 'resolved' })).status).toBe(404)
      expect((await t.http().delete(`/conversations/${foreign.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get('/conversations').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
      expect((await t.http().get(`/conversations/${foreign.id}`).set(acme.bearer).query({ organization_id: globex.organization.id })).status).toBe(403)
      expect(await read(globex, foreign.id)).toMatchObject({ status: 'open', deleted_at: null })
    })

    it("when a list names no organization with an API key, then only the key's organization's threads", async () => {
      const foreign = await createConversation(t, globex)
      const list = await t.http().get('/conversations').set(acme.key).send({ query: { id: foreign.id } })
      expect(list.body.total).toBe(0)
    })
  })
})
