import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createBoard, createContact, createConversation, inAnHour } from './fixtures.js'

describe('conversation bulk actions', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let member: Awaited<ReturnType<typeof addMember>>

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    member = await addMember(t, acme)
  })
  afterAll(async () => {
    await t.close()
  })

  const threads = async (count: number, fields: Record<string, unknown> = {}) => {
    const contact = await createContact(t, acme)
    const ids: number[] = []
    for (let i = 0; i < count; i++) ids.push((await createConversation(t, acme, { contact_id: contact.id, ...fields })).id)
    return ids
  }
  const bulk = (body: Record<string, unknown>, tenant = acme) => t.http().post('/conversations-bulk-actions').set(tenant.key).send(body)
  const stored = async (ids: number[]) => {
    const res = await t.http().get('/conversations').set(acme.key).send({ query: { id: { $in: ids }, $sort: { id: 1 } } })
    return res.body.data
  }

  it('when several threads are assigned (replace, then add), then each has the assignees and 201 names them', async () => {
    const ids = await threads(3, { assignee_user_ids: [member.user.id] })
    const replaced = await bulk({ action: 'assign', ids, params: { user_ids: [acme.user.id] } })
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(201)
    expect(replaced.body).toEqual({ action: 'assign', updated: 3, ids })
    expect((await stored(ids)).map((c: any) => c.assignee_user_ids)).toEqual([[acme.user.id], [acme.user.id], [acme.user.id]])
    await bulk({ action: 'assign', ids: ids.slice(0, 2), params: { user_ids: [member.user.id, acme.user.id], mode: 'add' } }).expect(201)
    expect((await stored(ids)).map((c: any) => c.assignee_user_ids)).toEqual([
      [acme.user.id, member.user.id], [acme.user.id, member.user.id], [acme.user.id]
    ])
    await bulk({ action: 'unassign', ids }).expect(201)
    expect((await stored(ids)).every((c: any) => c.assignee_user_ids.length === 0)).toBe(true)
  })

  it('when one id is another organization\'s (or missing, or deleted), then 400 errors.ids naming it and nothing changes', async () => {
    const ids = await threads(2)
    const foreign = await createConversation(t, globex)
    const [deleted] = await threads(1)
    await t.http().delete(`/conversations/${deleted}`).set(acme.key).expect(200)
    const res = await bulk({ action: 'set_status', ids: [...ids, foreign.id, deleted], params: { status: 'resolved' } })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ ids: `must be live conversations of this organization (not: ${foreign.id}, ${deleted})` })
    expect((await stored(ids)).map((c: any) => c.status)).toEqual(['open', 'open'])
    expect((await t.http().get(`/conversations/${foreign.id}`).set(globex.key)).body.status).toBe('open')
  })

  it('when a rule fails on one conversation (a non-member assignee), then 400 and none of them changed', async () => {
    const ids = await threads(3)
    const res = await bulk({ action: 'assign', ids, params: { user_ids: [globex.user.id] } })
    expect(res.status).toBe(400)
    expect(Object.keys(res.body.errors)).toEqual(['assignee_user_ids'])
    expect((await stored(ids)).every((c: any) => c.assignee_user_ids.length === 0)).toBe(true)
  })

  it('when statuses are set, then snoozing needs a future snoozed_until, and resolving clears it', async () => {
    const ids = await threads(2)
    const noTime = await bulk({ action: 'set_status', ids, params: { status: 'snoozed' } })
    expect(noTime.status).toBe(400)
    expect(Object.keys(noTime.body.errors)).toEqual(['snoozed_until'])
    const until = inAnHour()
    await bulk({ action: 'set_status', ids, params: { status: 'snoozed', snoozed_until: until } }).expect(201)
    expect((await stored(ids)).map((c: any) => [c.status, c.snoozed_until])).toEqual([['snoozed', until], ['snoozed', until]])
    await bulk({ action: 'set_status', ids, params: { status: 'resolved' } }).expect(201)
    expect((await stored(ids)).map((c: any) => [c.status, c.snoozed_until])).toEqual([['resolved', null], ['resolved', null]])
  })

  it('when marked unread, read, blocked, unblocked and moved to a stage, then each state reads back', async () => {
    const ids = await threads(2)
    const board = await createBoard(t, acme)
    await bulk({ action: 'mark_unread', ids }).expect(201)
    expect((await stored(ids)).map((c: any) => c.unread_count)).toEqual([1, 1])
    await bulk({ action: 'mark_read', ids }).expect(201)
    expect((await stored(ids)).map((c: any) => c.unread_count)).toEqual([0, 0])
    await bulk({ action: 'block', ids }).expect(201)
    expect((await stored(ids)).map((c: any) => c.is_blocked)).toEqual([true, true])
    await bulk({ action: 'unblock', ids }).expect(201)
    expect((await stored(ids)).map((c: any) => c.is_blocked)).toEqual([false, false])
    await bulk({ action: 'move_stage', ids, params: { pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[1].id } }).expect(201)
    expect((await stored(ids)).map((c: any) => c.pipeline_stage_id)).toEqual([board.stages[1].id, board.stages[1].id])
    const foreignBoard = await createBoard(t, globex)
    const foreignStage = await bulk({ action: 'move_stage', ids, params: { pipeline_id: foreignBoard.pipeline.id, pipeline_stage_id: foreignBoard.stages[0].id } })
    expect(foreignStage.status).toBe(400)
    expect((await stored(ids)).map((c: any) => c.pipeline_stage_id)).toEqual([board.stages[1].id, board.stages[1].id])
  })

  it('when deleted in bulk, then they are gone, with their messages', async () => {
    const ids = await threads(2)
    await t.http().post('/conversation-messages-playground').set(acme.key).send({ conversation_id: ids[0], content: 'bye' }).expect(201)
    const res = await bulk({ action: 'delete', ids })
    expect(res.body).toEqual({ action: 'delete', updated: 2, ids })
    expect(await stored(ids)).toEqual([])
    const messages = await t.http().get('/conversation-messages-playground').set(acme.key).send({ query: { conversation_id: ids[0] } })
    expect(messages.body.total).toBe(0)
  })

  it('when the body is malformed, then 400 naming the field', async () => {
    const ids = await threads(1)
    const cases: [Record<string, unknown>, string][] = [
      [{ action: 'archive', ids }, 'action'],
      [{ action: 'block', ids: [] }, 'ids'],
      [{ action: 'block', ids: Array.from({ length: 101 }, (_, i) => i + 1) }, 'ids'],
      [{ action: 'assign', ids, params: {} }, 'params.user_ids'],
      [{ action: 'assign', ids, params: { user_ids: [1], mode: 'merge' } }, 'params.mode'],
      [{ action: 'block', ids, params: { reason: 'spam' } }, 'params.reason'],
      [{ action: 'move_stage', ids, params: { pipeline_id: 1 } }, 'params.pipeline_stage_id']
    ]
    for (const [body, field] of cases) {
      const res = await bulk(body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(Object.keys(res.body.errors), JSON.stringify(body)).toEqual([field])
    }
  })

  it('when each conversation changes, then each emits its patched event, once the whole action is committed; a failed action emits none', async () => {
    const ids = await threads(3)
    const patched: number[] = []
    const listener = (conversation: any) => patched.push(conversation.id)
    t.app.service('conversations').on('patched', listener)
    try {
      const foreign = await createConversation(t, globex)
      await bulk({ action: 'block', ids: [...ids, foreign.id] }).expect(400)
      // With REDIS_URL the events make a round trip through Redis before they are emitted here.
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(patched).toEqual([])
      await bulk({ action: 'block', ids }).expect(201)
      await vi.waitFor(() => expect(patched).toEqual(ids))
    } finally {
      t.app.service('conversations').removeListener('patched', listener)
    }
  })

  it('when another organization is named, then 403', async () => {
    const ids = await threads(1)
    const res = await bulk({ organization_id: globex.organization.id, action: 'block', ids })
    expect(res.status).toBe(403)
    expect((await stored(ids))[0].is_blocked).toBe(false)
  })
})
