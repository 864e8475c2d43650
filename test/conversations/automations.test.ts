import { describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, createBoard, createContact, createConversation, created, inAnHour } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('automations and their executions', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const automate = async (tenant: Tenant, actions: unknown[], fields: Record<string, unknown> = {}) =>
    created(await t.http().post('/automations').set(tenant.key).send({ name: 'Triage', actions, ...fields }), 'automation')
  const run = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/automations-executions').set(tenant.key).send(body)
  const conversationOf = async (id: number) => (await t.http().get(`/conversations/${id}`).set(acme.key)).body
  const threadOf = async (channel: string, id: number) =>
    (await t.http().get(`/conversation-messages-${channel}`).set(acme.key).send({ query: { conversation_id: id } })).body.data

  describe('the automations resource', () => {
    it('when created, then 201 active with its actions; patched and deleted like any record', async () => {
      const res = await t.http().post('/automations').set(acme.key).send({ name: 'Welcome', actions: [{ type: 'send_message', content: 'Hi!' }] })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, name: 'Welcome', is_active: true,
        actions: [{ type: 'send_message', content: 'Hi!' }], created_by_user_id: acme.user.id,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      await t.http().patch(`/automations/${res.body.id}`).set(acme.key).send({ is_active: false, actions: [{ type: 'set_ai', enabled: true }] }).expect(200)
      expect((await t.http().get(`/automations/${res.body.id}`).set(acme.key)).body).toMatchObject({ is_active: false, actions: [{ type: 'set_ai', enabled: true }] })
      await t.http().delete(`/automations/${res.body.id}`).set(acme.key).expect(200)
      expect((await t.http().get(`/automations/${res.body.id}`).set(acme.key)).status).toBe(404)
    })

    it.each([
      [{ name: 'x', actions: [] }],
      [{ name: 'x', actions: [{ type: 'explode' }] }],
      [{ name: 'x', actions: [{ type: 'send_message' }] }],
      [{ name: 'x', actions: [{ type: 'set_ai', enabled: true, extra: 1 }] }],
      [{ actions: [{ type: 'set_ai', enabled: true }] }]
    ])('when the body is %j, then 400', async (body) => {
      const res = await t.http().post('/automations').set(acme.key).send(body)
      expect(res.status).toBe(400)
      expect(res.body.errors).toBeTruthy()
    })

    it("when another organization's automation is read or patched by id, then 404; naming its organization, then 403", async () => {
      const theirs = await automate(globex, [{ type: 'set_ai', enabled: true }])
      expect((await t.http().get(`/automations/${theirs.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().patch(`/automations/${theirs.id}`).set(acme.key).send({ name: 'Mine' })).status).toBe(404)
      expect((await t.http().get('/automations').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
    })
  })

  describe('running one', () => {
    it('when every action succeeds, then 201 succeeded with a result per action, and every change reads back', async () => {
      const member = await addMember(t, acme)
      const board = await createBoard(t, acme)
      const contact = await createContact(t, acme, { first_name: 'Lise' })
      const conversation = await createConversation(t, acme, { contact_id: contact.id, channel: 'whatsapp' })
      const predefined = created(await t.http().post('/conversation-predefined-messages').set(acme.key)
        .send({ title: 'Ack', content: 'Thanks {{contact.first_name}}, we are on it' }), 'predefined')
      const until = inAnHour()
      const automation = await automate(acme, [
        { type: 'send_predefined_message', predefined_message_id: predefined.id },
        { type: 'add_note', content: 'Routed by automation' },
        { type: 'assign', user_ids: [member.user.id] },
        { type: 'move_stage', pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[1].id },
        { type: 'set_ai', enabled: true },
        { type: 'set_status', status: 'snoozed', snoozed_until: until },
        { type: 'send_message', content: 'We will write again soon' }
      ])
      const res = await run(acme, { automation_id: automation.id, conversation_id: conversation.id, context: { trigger: 'manual' } })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toMatchObject({
        automation_id: automation.id, conversation_id: conversation.id, status: 'succeeded', context: { trigger: 'manual' }, created_by_user_id: acme.user.id
      })
      expect(res.body.results.map((r: any) => [r.type, r.ok])).toEqual([
        ['send_predefined_message', true], ['add_note', true], ['assign', true], ['move_stage', true], ['set_ai', true], ['set_status', true], ['send_message', true]
      ])
      const messages = await threadOf('whatsapp', conversation.id)
      expect(messages.map((m: any) => [m.id, m.direction, m.content])).toEqual([
        [res.body.results[0].message_id, 'outbound', 'Thanks Lise, we are on it'],
        [res.body.results[1].message_id, 'note', 'Routed by automation'],
        [res.body.results[6].message_id, 'outbound', 'We will write again soon']
      ])
      expect(await conversationOf(conversation.id)).toMatchObject({
        assignee_user_ids: [member.user.id], pipeline_stage_id: board.stages[1].id, status: 'snoozed', snoozed_until: until,
        ai_context: { enabled: true }, last_message_preview: 'We will write again soon'
      })
    })

    it("when an action fails, then 201 'failed' with results up to the failed one, nothing changed, and the execution is kept", async () => {
      const conversation = await createConversation(t, acme, { channel: 'sms' })
      const automation = await automate(acme, [
        { type: 'send_message', content: 'First' },
        { type: 'set_status', status: 'resolved' },
        { type: 'assign', user_ids: [globex.user.id] },
        { type: 'add_note', content: 'never reached' }
      ])
      const res = await run(acme, { automation_id: automation.id, conversation_id: conversation.id })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.status).toBe('failed')
      expect(res.body.results).toEqual([
        { type: 'send_message', ok: true, message_id: expect.any(Number) },
        { type: 'set_status', ok: true },
        { type: 'assign', ok: false, error: { message: 'Validation failed', errors: { assignee_user_ids: `must be members of this organization (not: ${globex.user.id})` } } }
      ])
      expect(await threadOf('sms', conversation.id)).toEqual([])
      expect(await conversationOf(conversation.id)).toMatchObject({ status: 'open', assignee_user_ids: [], last_message_at: null })
      const kept = await t.db('automation_executions').where({ organization_id: acme.organization.id, id: res.body.id }).first()
      expect(kept).toMatchObject({ status: 'failed', automation_id: automation.id, conversation_id: conversation.id })
    })

    it('when the automation is inactive, then 400 errors.automation_id and nothing runs', async () => {
      const conversation = await createConversation(t, acme, { channel: 'sms' })
      const automation = await automate(acme, [{ type: 'send_message', content: 'x' }], { is_active: false })
      const res = await run(acme, { automation_id: automation.id, conversation_id: conversation.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ automation_id: 'is not active' })
      expect(await threadOf('sms', conversation.id)).toEqual([])
    })

    it("when the automation or the conversation is another organization's, then 400 naming it; naming the organization, then 403", async () => {
      const mine = await createConversation(t, acme)
      const theirs = await createConversation(t, globex)
      const myAutomation = await automate(acme, [{ type: 'set_ai', enabled: true }])
      const theirAutomation = await automate(globex, [{ type: 'set_ai', enabled: true }])
      const foreignAutomation = await run(acme, { automation_id: theirAutomation.id, conversation_id: mine.id })
      expect(foreignAutomation.body.errors).toEqual({ automation_id: 'must be a automation of this organization' })
      const foreignConversation = await run(acme, { automation_id: myAutomation.id, conversation_id: theirs.id })
      expect(foreignConversation.body.errors).toEqual({ conversation_id: 'must be a conversation of this organization' })
      expect((await run(acme, { organization_id: globex.organization.id, automation_id: theirAutomation.id, conversation_id: theirs.id })).status).toBe(403)
      expect((await t.http().get(`/conversations/${theirs.id}`).set(globex.key)).body.ai_context.enabled).toBe(false)
    })

    it("when an automation names another organization's predefined message, then the run fails on it and changes nothing", async () => {
      const conversation = await createConversation(t, acme)
      const foreign = created(await t.http().post('/conversation-predefined-messages').set(globex.key).send({ title: 'x', content: 'theirs' }), 'predefined')
      const automation = await automate(acme, [{ type: 'set_ai', enabled: true }, { type: 'send_predefined_message', predefined_message_id: foreign.id }])
      const res = await run(acme, { automation_id: automation.id, conversation_id: conversation.id })
      expect(res.body.status).toBe('failed')
      expect(res.body.results[1].error.errors).toEqual({ predefined_message_id: 'must be a predefined message of this organization' })
      expect((await conversationOf(conversation.id)).ai_context.enabled).toBe(false)
    })
  })
})
