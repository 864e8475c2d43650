import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { startReceiver } from '../webhooks/receiver.js'
import type { Receiver } from '../webhooks/receiver.js'
import { citusTableType } from '../../migrations/lib/citus.js'

const CONTACTS = 15
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// Runs on a Citus coordinator (npm run test:citus, vitest.citus.config.ts): two instances of the
// service, each with its own pools and its own outbox worker, on one coordinator database, as two
// service processes behind a load balancer would be. The outbox stays on the coordinator (a Citus
// local table), so its SKIP LOCKED claims are PostgreSQL's own: every job runs once, whichever
// instance claims it, and one key's jobs run in order.
describe('the outbox under two service instances on a Citus coordinator', () => {
  let first: TestApp
  let second: TestApp
  let acme: Tenant
  let globex: Tenant
  let receiver: Receiver

  beforeAll(async () => {
    const options = { webhookAllowPrivate: true, webhookRetryBaseMs: 20, webhookTimeoutMs: 2000 }
    ;[first, second] = await Promise.all([startApp(options), startApp(options)])
    acme = await createTenant(first, 'Acme')
    globex = await createTenant(second, 'Globex')
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
    await Promise.all([first?.close(), second?.close()])
  })

  it('when the outbox is on the coordinator, then it is a Citus local table beside distributed tenant tables', async () => {
    expect(await citusTableType(first.db, 'outbox_jobs')).toBe('local')
    expect(await citusTableType(first.db, 'webhook_deliveries')).toBe('hash')
  })

  it("when both instances write events and both workers deliver, then every webhook job runs exactly once and each subscription's events arrive in the order written", async () => {
    const subscriptions = new Map<string, { tenant: Tenant; id: number }>()
    for (const tenant of [acme, globex]) {
      const path = `/hooks/${tenant.organization.id}`
      const res = await first.http().post('/webhook-subscriptions').set(tenant.key).send({ url: receiver.url(path), events: ['contacts.created'] })
      expect(res.status).toBe(201)
      subscriptions.set(path, { tenant, id: res.body.id })
    }

    // The writes alternate between the instances; each commit enqueues one job per subscription,
    // and both workers (polling, and kicked by their own instance's commits) claim them.
    for (let n = 1; n <= CONTACTS; n++) {
      for (const tenant of [acme, globex]) {
        const instance = n % 2 ? first : second
        const res = await instance.http().post('/contacts').set(tenant.key).send({ first_name: `C${String(n).padStart(2, '0')}`, last_name: tenant.organization.name })
        expect(res.status).toBe(201)
      }
    }
    const subscriptionIds = [...subscriptions.values()].map((s) => s.id)
    const jobs = () => first.db('outbox_jobs').where({ topic: 'webhook' }).whereIn('organization_id', [acme.organization.id, globex.organization.id])
    for (let i = 0; i < 400; i++) {
      await Promise.all([first.app.get('outbox').deliverDue(), second.app.get('outbox').deliverDue()])
      const waiting = await jobs().clone().whereIn('status', ['pending', 'running']).first('id')
      if (!waiting && receiver.received.length >= 2 * CONTACTS) break
      await sleep(25)
    }

    // Exactly once: one request per event, and every job done on its first attempt.
    const ids = receiver.received.map((r) => r.headers['webhook-id'])
    expect(receiver.received).toHaveLength(2 * CONTACTS)
    expect(new Set(ids).size).toBe(2 * CONTACTS)
    const rows = await jobs()
    expect(rows).toHaveLength(2 * CONTACTS)
    expect(rows.map((j) => [j.status, j.attempts]).filter(([status, attempts]) => status !== 'delivered' || attempts !== 1)).toEqual([])
    // Across both organizations: the background pool, which multi-shard reads are allowed on.
    const deliveries = await first.app.get('backgroundKnex')('webhook_deliveries').whereIn('subscription_id', subscriptionIds).select('status', 'attempts')
    expect(deliveries).toHaveLength(2 * CONTACTS)
    expect(deliveries.every((d) => d.status === 'delivered' && d.attempts === 1), JSON.stringify(deliveries)).toBe(true)

    // In order, per subscription (the ordering key): C01, C02, … as written.
    const written = Array.from({ length: CONTACTS }, (_, i) => `C${String(i + 1).padStart(2, '0')}`)
    for (const path of subscriptions.keys()) {
      const names = receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body).data.object.first_name)
      expect(names, path).toEqual(written)
    }
  })
})
