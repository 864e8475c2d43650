import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createBoard, createContact, createConversation } from '../conversations/fixtures.js'

/** The inbox never runs a query per row: the joined list and the joined read cost the same for few and many related records. */
describe('conversation query counts', () => {
  let t: TestApp
  let tenant: Tenant
  const PAGE = 12
  let fewAssignees: number
  let manyAssignees: number

  const list = (query: Record<string, unknown>) => t.http().get('/conversations').set(tenant.key).send({ query })

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Inbox counts')
    const members = [tenant.user.id]
    for (let i = 0; i < 3; i++) members.push((await addMember(t, tenant)).user.id)
    const board = await createBoard(t, tenant)
    // Every conversation has its own contact and its own assignees, so a query per row would show.
    for (let i = 0; i < PAGE; i++) {
      const contact = await createContact(t, tenant, { first_name: `Person ${i}` })
      const conversation = await createConversation(t, tenant, {
        contact_id: contact.id, assignee_user_ids: members.slice(0, 1 + (i % members.length)),
        pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[i % 2].id
      })
      if (i === 0) fewAssignees = conversation.id
      if (i === members.length - 1) manyAssignees = conversation.id
    }
  })
  afterAll(async () => {
    await t?.close()
  })

  it('when conversations are listed with fastJoinForConversationList, then a page of 12 costs as many queries as a page of 2', async () => {
    await list({ fastJoinForConversationList: true, $limit: 1 })
    const small = await countQueries(t.db, () => list({ fastJoinForConversationList: true, $limit: 2 }))
    const large = await countQueries(t.db, () => list({ fastJoinForConversationList: true, $limit: PAGE }))
    expect(large.result.body.data).toHaveLength(PAGE)
    expect(large.result.body.data.every((row: any) => row.contact && row.assignees.length === row.assignee_user_ids.length)).toBe(true)
    expect(large.count).toBe(small.count)
  })

  it('when a conversation with four assignees is read, then it costs as many queries as one with a single assignee', async () => {
    await t.http().get(`/conversations/${fewAssignees}`).set(tenant.key)
    const one = await countQueries(t.db, () => t.http().get(`/conversations/${fewAssignees}`).set(tenant.key))
    const four = await countQueries(t.db, () => t.http().get(`/conversations/${manyAssignees}`).set(tenant.key))
    expect(one.result.body.assignees).toHaveLength(1)
    expect(four.result.body.assignees).toHaveLength(4)
    expect(four.result.body).toMatchObject({ contact: expect.any(Object), pipeline_stage: expect.any(Object) })
    expect(four.count).toBe(one.count)
  })
})
