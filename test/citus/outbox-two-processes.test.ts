import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import type { Knex } from 'knex'
import { createKnex } from '../../src/db.js'
import { eventually, freePort, leftovers, run, waitForHealth } from '../helpers/process.js'
import { startReceiver } from '../webhooks/receiver.js'
import type { Receiver } from '../webhooks/receiver.js'

const CONTACTS = 15
const POLL_MS = 100
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** JSON in and out of one spawned service, with the headers given; throws on an answer >= 300. */
const api = (port: number, headers: Record<string, string> = {}) => async (method: string, route: string, body?: unknown) => {
  const response = await fetch(`http://127.0.0.1:${port}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const answer = await response.json().catch(() => null)
  if (response.status >= 300) throw new Error(`${method} :${port}${route}: ${response.status} ${JSON.stringify(answer)}`)
  return answer
}

/** The README's sign-up walk-through on one process: a user, an organization, its API key. */
async function signUp(port: number, name: string) {
  const call = api(port)
  const email = `processes-${crypto.randomUUID().slice(0, 8)}@example.test`
  const password = 'correct horse battery'
  await call('POST', '/users', { email, password, first_name: 'Ada', last_name: 'Lovelace' })
  const { accessToken } = await call('POST', '/authentication', { strategy: 'local', email, password })
  const bearer = api(port, { authorization: `Bearer ${accessToken}` })
  const organization = await bearer('POST', '/organizations', { name: `${name} ${crypto.randomUUID().slice(0, 6)}` })
  const { key } = await bearer('POST', '/api-keys', { organization_id: organization.id, name: 'two processes' })
  return { organizationId: organization.id as number, key: { 'x-api-key': key as string } }
}

// Runs on a Citus coordinator (npm run test:citus, vitest.citus.config.ts), like
// outbox-two-services.test.ts, but with two real service processes (`npm start`, as a user starts
// it) instead of two instances in the test's own process: nothing is shared between them but the
// database, and each one's outbox worker polls and is kicked by its own commits only.
describe('the outbox under two service processes on a Citus coordinator', () => {
  const left = leftovers('crm-citus-processes-')
  const ports: number[] = []
  let receiver: Receiver
  let db: Knex

  beforeAll(async () => {
    const databaseUrl = process.env.DATABASE_URL
    if (!databaseUrl) throw new Error('DATABASE_URL names the Citus coordinator database (vitest.citus.config.ts)')
    receiver = await startReceiver()
    // The global setup migrated the database; each process runs the migrations again on start,
    // which finds nothing to do.
    db = await createKnex(databaseUrl, left.tempDir())
    const env = {
      NODE_ENV: 'development',
      npm_config_update_notifier: 'false',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      CITUS_MULTI_SHARD_LEVEL: process.env.CITUS_MULTI_SHARD_LEVEL ?? 'error',
      REDIS_URL: '',
      // Both processes verify the JWTs either one signs.
      AUTH_SECRET: `two-processes-${crypto.randomUUID()}`,
      OUTBOX_POLL_INTERVAL_MS: String(POLL_MS),
      // The receiver listens on loopback over plain HTTP.
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_REQUIRE_HTTPS: 'false',
      WEBHOOK_RETRY_BASE_MS: '20',
      WEBHOOK_TIMEOUT_MS: '2000'
    }
    for (let i = 0; i < 2; i++) {
      let port = await freePort()
      while (ports.includes(port)) port = await freePort()
      ports.push(port)
    }
    const servers = ports.map((port) => left.started(run('npm', ['start'], { ...env, PORT: String(port), DATA_DIR: left.tempDir() })))
    await Promise.all(
      servers.map(async (server, i) => {
        const ready = await Promise.race([waitForHealth(ports[i], 90_000).then(() => true), server.exited.then(() => false)])
        expect(ready, server.output().stderr).toBe(true)
      })
    )
  }, 120_000)

  afterAll(async () => {
    await receiver?.close()
    await db?.destroy()
    await left.clear()
  })

  it("when contacts are written alternately through both processes, then every webhook is delivered exactly once, on its job's first attempt, and each subscription's events arrive in the order written", async () => {
    // One tenant signs up on each process; each subscribes through the other one.
    const [acme, globex] = await Promise.all([signUp(ports[0], 'Acme'), signUp(ports[1], 'Globex')])
    const tenants = [acme, globex]
    const subscriptions = new Map<string, number>()
    for (const [i, tenant] of tenants.entries()) {
      const path = `/hooks/${tenant.organizationId}`
      const subscription = await api(ports[1 - i], tenant.key)('POST', '/webhook-subscriptions', { url: receiver.url(path), events: ['contacts.created'] })
      subscriptions.set(path, subscription.id)
    }

    // Each commit enqueues one job per subscription; the process that served it kicks its own
    // worker, the other one finds the job when it polls: both claim from one queue.
    for (let n = 1; n <= CONTACTS; n++) {
      for (const tenant of tenants) {
        await api(ports[n % 2], tenant.key)('POST', '/contacts', { first_name: `C${String(n).padStart(2, '0')}`, last_name: 'Processes' })
      }
    }
    const organizationIds = tenants.map((t) => t.organizationId)
    const jobs = () => db('outbox_jobs').where({ topic: 'webhook' }).whereIn('organization_id', organizationIds)
    const drained = await eventually(async () => receiver.received.length >= 2 * CONTACTS && !(await jobs().clone().whereIn('status', ['pending', 'running']).first('id')), 30_000)
    expect(drained, `${receiver.received.length} received`).toBe(true)
    // A job claimed twice would be posted by both workers at about the same time: a few more polls
    // let a second post of the last jobs arrive before the count.
    await sleep(5 * POLL_MS)

    // Exactly once and none lost: one request per event, each event id once, the very events the
    // deliveries recorded.
    expect(receiver.received).toHaveLength(2 * CONTACTS)
    const ids = receiver.received.map((r) => r.headers['webhook-id'])
    expect(new Set(ids).size).toBe(2 * CONTACTS)
    expect(new Set(receiver.received.map((r) => JSON.parse(r.body).id)).size).toBe(2 * CONTACTS)
    // Across both organizations: the test's own connection, on which multi-shard reads are allowed.
    const deliveries = await db('webhook_deliveries').whereIn('subscription_id', [...subscriptions.values()]).select('event_id', 'status', 'attempts')
    expect(deliveries).toHaveLength(2 * CONTACTS)
    expect(deliveries.filter((d) => d.status !== 'delivered' || d.attempts !== 1)).toEqual([])
    expect(new Set(deliveries.map((d) => d.event_id))).toEqual(new Set(ids))
    const rows = await jobs()
    expect(rows).toHaveLength(2 * CONTACTS)
    expect(rows.map((j) => [j.id, j.status, j.attempts]).filter(([, status, attempts]) => status !== 'delivered' || attempts !== 1)).toEqual([])
    // Both processes' workers took part: the claims were contended, not all one process's.
    expect(new Set(rows.map((j) => j.claimed_by)).size).toBeGreaterThanOrEqual(2)

    // In order, per subscription (the ordering key): C01, C02, … as written.
    const written = Array.from({ length: CONTACTS }, (_, i) => `C${String(i + 1).padStart(2, '0')}`)
    for (const path of subscriptions.keys()) {
      const names = receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body).data.object.first_name)
      expect(names, path).toEqual(written)
    }
  }, 60_000)
})
