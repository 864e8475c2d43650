import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planOfCall, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * The inbox's two hot reads on a large organization are planned on their indexes, never on a
 * sequential scan: the open inbox by latest activity, and a conversation's latest messages.
 */
describe('conversation indexes', () => {
  let t: TestApp
  let tenant: Tenant
  let busyConversation: number

  /** The answer of one request and the plan of the read it ran. */
  async function planOf(request: () => Promise<{ status: number; body: any }>) {
    const { result: res, plan } = await planOfCall(t.app.get('knex'), request)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return { res, plan }
  }

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Busy inbox')
    const organizationId = tenant.organization.id
    await t.db.raw(
      `INSERT INTO contacts (organization_id, first_name, last_name) SELECT ?, 'Customer', md5(i::text) FROM generate_series(1, 2000) AS i`,
      [organizationId]
    )
    await t.db.raw(
      `INSERT INTO conversations (organization_id, channel, contact_id, status, snoozed_until, last_message_at, last_message_preview)
       SELECT ?, (ARRAY['whatsapp','instagram','messenger','webchat','sms','playground'])[1 + i % 6],
              (SELECT min(id) FROM contacts WHERE organization_id = ?) + i % 2000,
              (ARRAY['open','pending','snoozed','resolved'])[1 + i % 4],
              CASE WHEN i % 4 = 2 THEN now() + interval '1 day' END,
              now() - (i % 5000) * interval '1 minute', 'preview ' || i
       FROM generate_series(1, 20000) AS i`,
      [organizationId, organizationId]
    )
    busyConversation = (await t.db('conversations').where({ organization_id: organizationId, channel: 'playground' }).min({ id: 'id' }))[0].id
    await t.db.raw(
      `INSERT INTO conversation_messages (organization_id, conversation_id, channel, direction, sender_type, content, status, created_at)
       SELECT ?, c.id, c.channel, 'inbound', 'contact', 'message ' || m, 'received', now() - m * interval '1 second'
       FROM conversations c CROSS JOIN generate_series(1, 5) AS m WHERE c.organization_id = ?`,
      [organizationId, organizationId]
    )
    await t.db.raw(
      `INSERT INTO conversation_messages (organization_id, conversation_id, channel, direction, sender_type, content, status, created_at)
       SELECT ?, ?, 'playground', 'inbound', 'contact', 'long thread ' || m, 'received', now() - m * interval '1 second'
       FROM generate_series(1, 2000) AS m`,
      [organizationId, busyConversation]
    )
    // What autovacuum does in production: statistics, and GIN pending lists merged into the index.
    await t.db.raw('VACUUM ANALYZE conversations')
    await t.db.raw('VACUUM ANALYZE conversation_messages')
  }, 120_000)
  afterAll(async () => {
    await t.close()
  })

  it('when the open inbox is listed newest first with its joins, then the page and the total are planned on indexes, without a sequential scan', async () => {
    const { res, plan } = await planOf(
      () => t.http().get('/conversations').set(tenant.key).send({ query: { status: 'open', $sort: { last_message_at: -1 }, fastJoinForConversationList: true, $limit: 50 } })
    )
    expect(res.body.data).toHaveLength(50)
    expect(res.body.total).toBe(5000)
    const times = res.body.data.map((c: any) => c.last_message_at)
    expect([...times].sort().reverse()).toEqual(times)
    expect(plan, plan).not.toContain('Seq Scan')
  }, 60_000)

  it("when a conversation's last 50 messages are read, then they are planned on the thread index", async () => {
    const { res, plan } = await planOf(
      () => t.http().get('/conversation-messages-playground').set(tenant.key).send({ query: { conversation_id: busyConversation, $sort: { created_at: -1 }, $limit: 50 } })
    )
    expect(res.body.data).toHaveLength(50)
    expect(res.body.total).toBe(2005)
    expect(plan, plan).not.toContain('Seq Scan')
  }, 60_000)
})
