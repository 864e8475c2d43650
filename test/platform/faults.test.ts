import crypto from 'node:crypto'
import http from 'node:http'
import pg from 'pg'
import pino from 'pino'
import { io as connectSocket } from 'socket.io-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKnex, migrate } from '../../src/db.js'
import { enqueueJobs, OutboxWorker } from '../../src/outbox/index.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import { exchange, freePort, leftovers, run, waitForHealth } from '../helpers/process.js'
import type { Exchange } from '../helpers/process.js'

// The service as deployed, meeting faults: its database connections dropped under load (what a
// failover, a restart or an idle-session timeout does), and SIGTERM while requests are in flight.
const left = leftovers('crm-faults-')
afterAll(() => left.clear())
const tempDataDir = () => left.tempDir()

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A database of its own: a scratch one on the PostgreSQL server of DATABASE_URL, else embedded on disk. */
async function ownDatabase() {
  const dataDir = tempDataDir()
  if (!process.env.DATABASE_URL) return { url: '', dataDir }
  const scratch = await left.scratchDatabase(process.env.DATABASE_URL, 'crm_faults_test')
  return { url: scratch.url, dataDir }
}

/** `npm start` on the database until GET /health answers. */
async function startServer(database: { url: string; dataDir: string }, env: Record<string, string> = {}) {
  const port = await freePort()
  const server = run('npm', ['start'], {
    npm_config_update_notifier: 'false',
    LOG_LEVEL: 'info',
    PORT: String(port),
    DATABASE_URL: database.url,
    DATA_DIR: database.dataDir,
    REDIS_URL: '',
    RATE_LIMIT_ENABLED: 'false',
    ...env
  })
  left.started(server)
  const ready = await Promise.race([waitForHealth(port, 90_000).then(() => true), server.exited.then(() => false)])
  expect(ready, server.output().stderr).toBe(true)
  return { server, port }
}

/** The README's bootstrap over HTTP: a user, an organization, and its API key's headers. */
async function apiKeyHeaders(port: number): Promise<Record<string, string>> {
  const api = `http://127.0.0.1:${port}`
  const post = async (route: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(api + route, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
    const answer = await response.json()
    if (response.status !== 201) throw new Error(`${route}: ${response.status} ${JSON.stringify(answer)}`)
    return answer
  }
  const email = `faults-${Date.now()}@example.test`
  await post('/users', { email, password: 'correct horse battery', first_name: 'Ada', last_name: 'Lovelace' })
  const { accessToken } = await post('/authentication', { strategy: 'local', email, password: 'correct horse battery' })
  const bearer = { authorization: `Bearer ${accessToken}` }
  const organization = await post('/organizations', { name: 'Fault Lines Ltd' }, bearer)
  const { key } = await post('/api-keys', { organization_id: organization.id, name: 'faults' }, bearer)
  return { 'x-api-key': key }
}

/**
 * Writers creating contacts and readers reading them back (by id, and pages), each client on its
 * own keep-alive connection, one request after the other, until stopped.
 */
function startLoad(port: number, key: Record<string, string>, counts: { readers: number; writers: number }) {
  const exchanges: Exchange[] = []
  const created: number[] = []
  let stopped = false
  const client = async (step: (agent: http.Agent, n: number) => Promise<Exchange>) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    for (let n = 0; !stopped; n++) {
      const done = await step(agent, n)
      exchanges.push(done)
      if (done.status === 201) created.push(done.body.id)
      if (done.error) await sleep(20)
    }
    agent.destroy()
  }
  const write = (writer: number) => (agent: http.Agent, n: number) =>
    exchange(agent, port, 'POST', '/contacts', key, { first_name: `Writer ${writer}`, last_name: `Contact ${n}` })
  const read = (agent: http.Agent, n: number) =>
    n % 2 === 0 && created.length > 0
      ? exchange(agent, port, 'GET', `/contacts/${created[Math.floor(Math.random() * created.length)]}`, key)
      : exchange(agent, port, 'GET', '/contacts?$limit=10', key)
  const clients = [
    ...Array.from({ length: counts.writers }, (_, writer) => client(write(writer))),
    ...Array.from({ length: counts.readers }, () => client(read))
  ]
  return {
    exchanges,
    created,
    stop: async () => {
      stopped = true
      await Promise.all(clients)
    }
  }
}

/** The JSON lines the server logged, with their messages and times. */
const logLines = (stdout: string): { msg?: string; time?: number; [key: string]: unknown }[] =>
  stdout.split('\n').flatMap((line) => {
    try {
      return line.startsWith('{') ? [JSON.parse(line)] : []
    } catch {
      return []
    }
  })

/** The ids among ids that the database holds as contacts. */
async function storedContacts(database: { url: string; dataDir: string }, ids: number[]) {
  const db = await createKnex(database.url, database.dataDir, 1)
  try {
    return (await db('contacts').whereIn('id', ids).pluck('id')) as number[]
  } finally {
    await db.destroy()
  }
}

/**
 * Runs request while the test holds contacts locked, terminates the backend that waits for the
 * lock (the request's statement), then lets go: what the request answers after losing its connection.
 */
async function answerAfterItsConnectionIsTerminated(databaseUrl: string, request: Promise<any>) {
  const locker = new pg.Client({ connectionString: databaseUrl })
  await locker.connect()
  try {
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE')
    const answer = request.then((response) => response)
    let waiting: number[] = []
    for (let polls = 0; waiting.length === 0 && polls < 250; polls++) {
      await sleep(20)
      const { rows } = await locker.query("SELECT pid FROM pg_locks WHERE relation = 'contacts'::regclass AND NOT granted")
      waiting = rows.map((row) => row.pid)
    }
    expect(waiting, 'the request waiting for the lock').toHaveLength(1)
    await locker.query('SELECT pg_terminate_backend($1)', [waiting[0]])
    await locker.query('ROLLBACK')
    return await answer
  } finally {
    await locker.end()
  }
}

describe.skipIf(!process.env.DATABASE_URL)('a statement whose connection is terminated', () => {
  let t: TestApp
  afterAll(async () => {
    await t?.close()
  })

  it('when a read loses its connection mid-statement, then it is answered from a fresh connection; when a write does, then 503 with Retry-After and nothing is written', { timeout: 60_000 }, async () => {
    const { url: databaseUrl } = await ownDatabase()
    const db = await createKnex(databaseUrl, tempDataDir(), 1)
    await migrate(db).finally(() => db.destroy())
    t = await startApp({ databaseUrl, rateLimitEnabled: false })
    const tenant = await createTenant(t)
    const contact = await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Grace', last_name: 'Read' })
    expect(contact.status).toBe(201)

    const read = await answerAfterItsConnectionIsTerminated(databaseUrl, t.http().get(`/contacts/${contact.body.id}`).set(tenant.key))
    expect({ status: read.status, id: read.body.id }).toEqual({ status: 200, id: contact.body.id })
    const page = await answerAfterItsConnectionIsTerminated(databaseUrl, t.http().get('/contacts').set(tenant.key))
    expect({ status: page.status, ids: page.body.data?.map((row: { id: number }) => row.id) }).toEqual({ status: 200, ids: [contact.body.id] })

    const write = await answerAfterItsConnectionIsTerminated(databaseUrl, t.http().post('/contacts').set(tenant.key).send({ first_name: 'Lost', last_name: 'Write' }))
    expect({ status: write.status, retryAfter: write.headers['retry-after'], body: write.body }).toEqual({
      status: 503,
      retryAfter: '1',
      body: { name: 'Unavailable', message: 'The service lost a connection it needed; send the request again', code: 503, className: 'unavailable', data: { retryAfter: 1 } }
    })
    const found = await t.http().get('/contacts').set(tenant.key).send({ query: { last_name: 'Write' } })
    expect({ status: found.status, total: found.body.total }).toEqual({ status: 200, total: 0 })
  })
})

describe('the outbox worker at shutdown', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => {
    await t?.close()
  })

  it('when the worker stops while jobs run, then the jobs under way finish before stop returns and nothing more is claimed: the rest stay pending and due, no attempt counted', async () => {
    const topic = `test-${crypto.randomUUID()}`
    const ran: string[] = []
    let bothRun = () => {}
    const bothRunning = new Promise<void>((resolve) => (bothRun = resolve))
    let finish = () => {}
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const worker = new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }), concurrency: 2 }).register({
      topic,
      maxAttempts: 3,
      retryBaseMs: 0,
      async run(job) {
        ran.push(job.kind)
        if (ran.length === 2) bothRun()
        await finished
        return { status: 'done' }
      }
    })
    await enqueueJobs(t.db, ['first', 'second', 'third'].map((kind) => ({ topic, kind, payload: {} })))
    worker.start()
    worker.kick()
    await bothRunning
    const stopped = worker.stop()
    finish()
    await stopped

    expect(ran).toEqual(['first', 'second'])
    const rows = await t.db('outbox_jobs').where({ topic }).orderBy('id').select('kind', 'status', 'attempts', t.db.raw('next_attempt_at <= now() AS due'))
    expect(rows).toEqual([
      { kind: 'first', status: 'done', attempts: 1, due: expect.any(Boolean) },
      { kind: 'second', status: 'done', attempts: 1, due: expect.any(Boolean) },
      { kind: 'third', status: 'pending', attempts: 0, due: true }
    ])
  })
})

describe('faults', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    "when the database server terminates the service's connections four times under 10 readers and 10 writers, then the process survives, requests succeed within 1 s of each kill, the only 5xx are 503s with Retry-After to requests in flight at a kill, and every 201 is readable",
    async () => {
      const database = await ownDatabase()
      const { server, port } = await startServer(database)
      const key = await apiKeyHeaders(port)
      const load = startLoad(port, key, { readers: 10, writers: 10 })
      const admin = new pg.Client({ connectionString: database.url })
      await admin.connect()
      const kills: number[] = []
      const terminated: number[] = []
      try {
        for (let kill = 0; kill < 4; kill++) {
          await sleep(1_500)
          kills.push(Date.now())
          const { rows } = await admin.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()'
          )
          terminated.push(rows.length)
        }
        await sleep(1_500)
      } finally {
        await load.stop()
        await admin.end()
      }
      const { stderr } = server.output()
      expect(server.child.exitCode, stderr).toBe(null)
      expect(stderr).not.toMatch(/Unhandled 'error' event|Connection terminated/)
      expect(terminated.every((count) => count > 0), `connections terminated at each kill: ${terminated}`).toBe(true)

      const answered = load.exchanges
      expect(answered.filter((done) => done.error || ![200, 201, 503].includes(done.status!))).toEqual([])
      const inFlightAtAKill = (done: Exchange) => kills.some((kill) => done.startedAt <= kill + 1_000 && done.answeredAt! >= kill)
      const failed = answered.filter((done) => done.status! >= 500)
      for (const done of failed) {
        expect({ status: done.status, retryAfter: done.headers!['retry-after'], inFlightAtAKill: inFlightAtAKill(done) }).toEqual({
          status: 503,
          retryAfter: '1',
          inFlightAtAKill: true
        })
        expect(done.body).toEqual({ name: 'Unavailable', message: expect.any(String), code: 503, className: 'unavailable', data: { retryAfter: 1 } })
      }
      for (const kill of kills) {
        const within = (done: Exchange) => done.startedAt >= kill && done.answeredAt! <= kill + 1_000
        expect(answered.some((done) => within(done) && done.status === 201), `a 201 within 1 s of the kill at ${kill}`).toBe(true)
        expect(answered.some((done) => within(done) && done.status === 200), `a read within 1 s of the kill at ${kill}`).toBe(true)
      }

      expect(load.created.length).toBeGreaterThan(100)
      const agent = new http.Agent({ keepAlive: true })
      for (let at = 0; at < load.created.length; at += 100) {
        const ids = load.created.slice(at, at + 100)
        const page = await exchange(agent, port, 'GET', '/contacts', key, { query: { id: { $in: ids }, $limit: 100 } })
        expect(page.status).toBe(200)
        expect(page.body.data.map((contact: { id: number }) => contact.id).sort((a: number, b: number) => a - b)).toEqual([...ids].sort((a, b) => a - b))
      }
      agent.destroy()
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)
    },
    180_000
  )

  const drainCases: [string, Record<string, string>][] = [['one process', {}]]
  if (process.env.DATABASE_URL) drainCases.push(['WEB_CONCURRENCY=2', { WEB_CONCURRENCY: '2' }])

  it.each(drainCases)(
    'when `npm start` (%s) gets SIGTERM under 10 keep-alive writers and a Socket.io client, then it answers every request that had arrived, closes each connection after its answer, serves no new request, disconnects the socket, persists every 201, logs "stopped" and exits 0 within the timeout',
    async (_label, env) => {
      const database = await ownDatabase()
      const { server, port } = await startServer(database, env)
      const key = await apiKeyHeaders(port)
      let exited = false
      void server.exited.then(() => (exited = true))
      const socket = connectSocket(`http://127.0.0.1:${port}`, { auth: { apiKey: key['x-api-key'] }, transports: ['websocket'], forceNew: true, reconnection: false })
      await new Promise((resolve, reject) => socket.on('connect', () => resolve(undefined)).on('connect_error', reject))
      const socketClosed = new Promise((resolve) => socket.on('disconnect', resolve))
      const load = startLoad(port, key, { readers: 0, writers: 10 })
      await sleep(1_000)

      // A request being handled across the signal: its headers and half its body arrive before it.
      let sendTheRest = () => {}
      const slow = exchange(new http.Agent({ keepAlive: true }), port, 'POST', '/contacts', key, { first_name: 'Slow', last_name: 'Writer' }, new Promise<void>((resolve) => (sendTheRest = resolve)))
      await sleep(300)
      const signalled = Date.now()
      process.kill(server.child.pid!, 'SIGTERM')
      await sleep(500)
      sendTheRest()

      const code = await server.exited
      const stoppedAfter = Date.now() - signalled
      const slowAnswer = await slow
      await load.stop()
      expect(await Promise.race([socketClosed, sleep(1_000).then(() => 'still open')])).toBe('transport close')
      expect({ code, exited }, server.output().stderr).toEqual({ code: 0, exited: true })
      expect(stoppedAfter).toBeLessThan(10_000)

      const lines = logLines(server.output().stdout)
      const drains = lines.filter((line) => line.msg === 'shutting down').map((line) => line.time!)
      expect(drains).toHaveLength(env.WEB_CONCURRENCY ? 2 : 1)
      expect(lines.some((line) => line.msg === 'stopped')).toBe(true)
      const drainBegan = Math.max(...drains)

      expect({ status: slowAnswer.status, connection: slowAnswer.headers?.connection }).toEqual({ status: 201, connection: 'close' })
      const sentBeforeTheSignal = load.exchanges.filter((done) => done.sentAt !== undefined && done.sentAt < signalled)
      expect(sentBeforeTheSignal.filter((done) => done.status === undefined)).toEqual([])
      expect(load.exchanges.filter((done) => done.startedAt > drainBegan && done.status !== undefined)).toEqual([])
      // An answer seen well after the drain began was written during it (the margin: an answer
      // written just before may reach this busy process a little later).
      const duringTheDrain = load.exchanges.filter((done) => done.status !== undefined && done.answeredAt! > drainBegan + 250)
      for (const done of duringTheDrain) expect(done.headers!.connection).toBe('close')

      const created = [...load.created, slowAnswer.body.id]
      expect(load.exchanges.filter((done) => done.status !== undefined && done.status !== 201)).toEqual([])
      expect((await storedContacts(database, created)).sort((a, b) => a - b)).toEqual(created.sort((a, b) => a - b))
    },
    180_000
  )
})
