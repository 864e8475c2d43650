import crypto from 'node:crypto'
import pino from 'pino'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import { enqueueJob, enqueueJobs, OutboxWorker } from '../../src/outbox/index.js'
import type { JobHandler, JobOutcome, OutboxJob } from '../../src/outbox/index.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
// Several workers on one database race only on a Postgres server; embedded Postgres has one connection.
const server = Boolean(process.env.DATABASE_URL)

describe('the transactional outbox (one worker for mail, channel messages and webhooks)', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => {
    await t?.close()
  })

  // Each test has a topic of its own: the application's worker and other test files never claim it.
  const newTopic = () => `test-${crypto.randomUUID()}`
  const workerFor = (handler: Partial<JobHandler> & Pick<JobHandler, 'topic' | 'run'>) =>
    new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }) }).register({ maxAttempts: 3, retryBaseMs: 0, ...handler })
  const jobs = (topic: string) => t.db('outbox_jobs').where({ topic }).orderBy('id')

  it('when jobs share an ordering key, then they run one at a time in the order written, a retried one holding back the ones after it; other keys go on meanwhile', async () => {
    const topic = newTopic()
    const runs: string[] = []
    let failedOnce = false
    const worker = workerFor({
      topic,
      retryBaseMs: 0,
      async run(job): Promise<JobOutcome> {
        runs.push(job.kind)
        if (job.kind === 'a1' && !failedOnce) {
          failedOnce = true
          return { status: 'retry', error: 'receiver said 500' }
        }
        return { status: 'done' }
      }
    })
    await enqueueJobs(t.db, [
      { topic, kind: 'a1', payload: {}, orderingKey: 'a' },
      { topic, kind: 'b1', payload: {}, orderingKey: 'b' },
      { topic, kind: 'a2', payload: {}, orderingKey: 'a' },
      { topic, kind: 'a3', payload: {}, orderingKey: 'a' }
    ])
    const report = await worker.deliverDue()
    expect(report).toMatchObject({ done: 4, retrying: 1, failed: 0 })
    expect(runs.filter((kind) => kind.startsWith('a'))).toEqual(['a1', 'a1', 'a2', 'a3'])
    expect(runs.indexOf('b1')).toBeLessThan(runs.indexOf('a2'))
    expect((await jobs(topic)).map((j) => [j.kind, j.status, j.attempts])).toEqual([
      ['a1', 'done', 2], ['b1', 'done', 1], ['a2', 'done', 1], ['a3', 'done', 1]
    ])
  })

  it.runIf(server)('when three workers drain one key at once, then its jobs never overlap and still run in order, each exactly once', async () => {
    const topic = newTopic()
    const runs: number[] = []
    let inFlight = 0
    let overlap = false
    const handler = {
      topic,
      async run(job: OutboxJob): Promise<JobOutcome> {
        inFlight += 1
        if (inFlight > 1) overlap = true
        runs.push(job.payload.n)
        await sleep(5)
        inFlight -= 1
        return { status: 'done' }
      }
    }
    await enqueueJobs(t.db, Array.from({ length: 12 }, (_, n) => ({ topic, kind: 'ordered', payload: { n }, orderingKey: 'one' })))
    const workers = [1, 2, 3].map(() => workerFor(handler))
    // Each worker keeps draining until the key is empty; the others find the next job locked or held back.
    await Promise.all(workers.map(async (w) => {
      for (let i = 0; i < 40 && runs.length < 12; i++) {
        await w.deliverDue()
        await sleep(2)
      }
    }))
    expect(overlap).toBe(false)
    expect(runs).toEqual(Array.from({ length: 12 }, (_, n) => n))
  })

  /** A handler whose jobs run until released; counts how many run at once. */
  function hangingHandler(topic: string) {
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    const state = { running: 0, most: 0, release }
    const handler: JobHandler = {
      topic, maxAttempts: 3, retryBaseMs: 0,
      async run(): Promise<JobOutcome> {
        state.running += 1
        state.most = Math.max(state.most, state.running)
        await released
        state.running -= 1
        return { status: 'done' }
      }
    }
    return { handler, state }
  }

  /** Drains with the worker; once `ran` has an entry (or after 2 s), notes it and how many jobs hang, then releases them. */
  async function drainWhileHanging(worker: OutboxWorker, state: ReturnType<typeof hangingHandler>['state'], ran: unknown[]) {
    const draining = worker.deliverDue()
    let meanwhile: { ran: unknown[]; hanging: number }
    try {
      for (let i = 0; i < 200 && ran.length === 0; i++) await sleep(10)
      meanwhile = { ran: [...ran], hanging: state.running }
    } finally {
      state.release()
    }
    return { meanwhile, report: await draining }
  }

  it("when one organization's jobs hang, then they take at most its share of the topic's slots and another organization's job runs meanwhile", async () => {
    const topic = newTopic()
    const [slow, calm] = await Promise.all([createTenant(t, 'Slow'), createTenant(t, 'Calm')])
    const { handler, state } = hangingHandler(topic)
    const ran: number[] = []
    const worker = new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }), concurrency: 4, concurrencyPerOrganization: 2 }).register({
      ...handler,
      run: async (job) => (job.organization_id === calm.organization.id ? (ran.push(job.id), { status: 'done' }) : handler.run(job))
    })
    await enqueueJobs(t.db, Array.from({ length: 5 }, () => ({ topic, kind: 'slow', organizationId: slow.organization.id, payload: {} })))
    const [calmJob] = await enqueueJobs(t.db, [{ topic, kind: 'calm', organizationId: calm.organization.id, payload: {} }])
    const { meanwhile, report } = await drainWhileHanging(worker, state, ran)
    expect(meanwhile).toEqual({ ran: [calmJob.id], hanging: 2 })
    expect(report).toMatchObject({ done: 6 })
    expect(state.most).toBe(2)
  })

  it("when every slot of one topic is taken by hanging jobs, then another topic's job runs meanwhile", async () => {
    const [slowTopic, quickTopic] = [newTopic(), newTopic()]
    const { handler, state } = hangingHandler(slowTopic)
    const ran: string[] = []
    const worker = new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }), concurrency: 2 })
      .register(handler)
      .register({ topic: quickTopic, maxAttempts: 3, retryBaseMs: 0, run: async (job) => { ran.push(job.kind); return { status: 'done' } } })
    await enqueueJobs(t.db, [1, 2, 3].map(() => ({ topic: slowTopic, kind: 'slow', payload: {} })))
    await enqueueJob(t.db, { topic: quickTopic, kind: 'quick', payload: {} })
    const { meanwhile, report } = await drainWhileHanging(worker, state, ran)
    expect(meanwhile).toEqual({ ran: ['quick'], hanging: 2 })
    expect(report).toMatchObject({ done: 4 })
    expect(state.most).toBe(2)
  })

  it('when the far side asks to wait (Retry-After), then the next attempt is not before that, even when the backoff is shorter', async () => {
    const topic = newTopic()
    const worker = workerFor({ topic, retryBaseMs: 1000, run: async () => ({ status: 'retry', error: '429', retryAfterMs: 7000 }) })
    await enqueueJob(t.db, { topic, kind: 'limited', payload: {} })
    expect(await worker.deliverDue()).toMatchObject({ retrying: 1 })
    const [job] = await jobs(topic)
    expect(job).toMatchObject({ status: 'pending', attempts: 1, last_error: '429' })
    expect(job.next_attempt_at.getTime() - job.updated_at.getTime()).toBe(7000)
    expect(await worker.deliverDue()).toMatchObject({ retrying: 0, done: 0 })
  })

  it('when a handler refuses for good or throws on every attempt, then the job is failed, its failure handler runs once, and it is not tried again', async () => {
    const topic = newTopic()
    const givenUp: Array<[string, string]> = []
    const worker = workerFor({
      topic,
      maxAttempts: 2,
      async run(job): Promise<JobOutcome> {
        if (job.kind === 'refused') return { status: 'failed', error: '400 invalid recipient', result: { code: 131026 } }
        throw new Error('connect ECONNREFUSED')
      },
      onFailed: async (job, error) => { givenUp.push([job.kind, error]) }
    })
    await enqueueJobs(t.db, [{ topic, kind: 'refused', payload: {} }, { topic, kind: 'unreachable', payload: {} }])
    expect(await worker.deliverDue()).toMatchObject({ failed: 2, retrying: 1 })
    expect(await worker.deliverDue()).toMatchObject({ failed: 0, retrying: 0 })
    const rows = await jobs(topic)
    expect(rows.map((j) => [j.kind, j.status, j.attempts, j.last_error, j.result])).toEqual([
      ['refused', 'failed', 1, '400 invalid recipient', { code: 131026 }],
      ['unreachable', 'failed', 2, 'connect ECONNREFUSED', null]
    ])
    expect(rows.every((j) => j.done_at instanceof Date)).toBe(true)
    expect(givenUp).toEqual([['refused', '400 invalid recipient'], ['unreachable', 'connect ECONNREFUSED']])
  })

  it('when a handler fails for a reason no retry can fix (a data error of the database), then the job is failed at once with the error and the next job of its key runs in the same pass; a network error is retried', async () => {
    const topic = newTopic()
    const runs: string[] = []
    const worker = workerFor({
      topic,
      maxAttempts: 8,
      retryBaseMs: 60_000,
      async run(job): Promise<JobOutcome> {
        runs.push(job.kind)
        // Text Postgres cannot store: 22021 on a server, the same class 22 error on embedded Postgres.
        if (job.kind === 'poisoned') await t.db.raw('SELECT ?::text AS text', ['before\u0000after'])
        if (job.kind === 'unreachable') throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' })
        return { status: 'done' }
      }
    })
    await enqueueJobs(t.db, [
      { topic, kind: 'poisoned', payload: {}, orderingKey: `${topic}:one` },
      { topic, kind: 'next', payload: {}, orderingKey: `${topic}:one` },
      { topic, kind: 'unreachable', payload: {}, orderingKey: `${topic}:two` }
    ])
    expect(await worker.deliverDue()).toMatchObject({ done: 1, failed: 1, retrying: 1 })
    expect(runs).toEqual(['poisoned', 'unreachable', 'next'])
    const rows = await jobs(topic)
    expect(rows.map((j) => [j.kind, j.status, j.attempts])).toEqual([['poisoned', 'failed', 1], ['next', 'done', 1], ['unreachable', 'pending', 1]])
    expect(rows[0].result).toEqual({ permanent: true, code: expect.stringMatching(/^22/) })
    expect(rows[0].last_error).toMatch(/0x00|invalid byte sequence|null character/)
    expect(rows[2].result).toBeNull()
  })

  it('when a job is kicked in a transaction, then it runs right after the commit without a poll, and a rolled-back one never runs', async () => {
    const topic = newTopic()
    const ran: string[] = []
    const worker = workerFor({ topic, run: async (job) => { ran.push(job.kind); return { status: 'done', label: 'delivered' } } })
    worker.start()
    try {
      await t.db.transaction(async (trx) => {
        await enqueueJob(trx, { topic, kind: 'committed', payload: {} })
        worker.kickAfterCommit(trx)
        await sleep(30)
        expect(ran).toEqual([])
      })
      await t.db.transaction(async (trx) => {
        await enqueueJob(trx, { topic, kind: 'rolled-back', payload: {} })
        worker.kickAfterCommit(trx)
        throw new Error('the change failed')
      }).catch(() => {})
      for (let i = 0; i < 100 && ran.length === 0; i++) await sleep(10)
      await sleep(50)
      expect(ran).toEqual(['committed'])
      expect((await jobs(topic)).map((j) => [j.kind, j.status])).toEqual([['committed', 'delivered']])
    } finally {
      await worker.stop()
    }
  })

  it('when a worker died holding a job, then nobody takes it during its lease and another worker takes it over once the lease has run out', async () => {
    const topic = newTopic()
    const ran: number[] = []
    const worker = workerFor({ topic, run: async (job) => { ran.push(job.attempts); return { status: 'done' } } })
    const [held] = await enqueueJobs(t.db, [{ topic, kind: 'held', payload: {} }])
    // What a claim leaves behind: running, one attempt, lease until next_attempt_at.
    await t.db('outbox_jobs').where({ id: held.id }).update({ status: 'running', attempts: 1, next_attempt_at: t.db.raw("now() + interval '1 minute'") })
    expect(await worker.deliverDue()).toMatchObject({ done: 0 })
    await t.db('outbox_jobs').where({ id: held.id }).update({ next_attempt_at: t.db.raw("now() - interval '1 second'") })
    expect(await worker.deliverDue()).toMatchObject({ done: 1 })
    expect(ran).toEqual([2])
  })

  it('when handlers run side by side for longer than the lease, then their worker renews each lease meanwhile and no other worker takes any of the jobs', async () => {
    const topic = newTopic()
    const runs: number[] = []
    const inFlight = { now: 0, most: 0 }
    const handler = {
      topic,
      run: async (job: OutboxJob): Promise<JobOutcome> => {
        runs.push(job.attempts)
        inFlight.most = Math.max(inFlight.most, ++inFlight.now)
        await sleep(2500)
        inFlight.now -= 1
        return { status: 'done' }
      }
    }
    const holder = new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }), leaseSeconds: 1 }).register({ maxAttempts: 3, retryBaseMs: 0, ...handler })
    const other = new OutboxWorker({ db: t.db, logger: pino({ level: 'silent' }), leaseSeconds: 1 }).register({ maxAttempts: 3, retryBaseMs: 0, ...handler })
    await enqueueJobs(t.db, [1, 2, 3].map(() => ({ topic, kind: 'long', payload: {} })))
    const holding = holder.deliverDue()
    for (let i = 0; i < 4; i++) {
      await sleep(500)
      expect(await other.deliverDue()).toMatchObject({ done: 0 })
    }
    expect(await holding).toMatchObject({ done: 3 })
    expect(runs).toEqual([1, 1, 1])
    expect(inFlight.most).toBe(3)
    expect((await jobs(topic)).map((j) => [j.status, j.attempts])).toEqual([['done', 1], ['done', 1], ['done', 1]])
  })

  it('when a job is running under the id of a worker whose process is gone, then a worker that starts takes it over at once; the job of a live worker keeps its lease', async () => {
    const [topic, busyTopic] = [newTopic(), newTopic()]
    let release = () => {}
    const busy = new Promise<void>((resolve) => (release = resolve))
    const alive = workerFor({ topic: busyTopic, run: async () => { await busy; return { status: 'done' } } })
    const ran: string[] = []
    const starting = workerFor({ topic, run: async (job) => { ran.push(job.kind); return { status: 'done' } } })
    try {
      alive.start()
      await enqueueJob(t.db, { topic: busyTopic, kind: 'of-alive', payload: {} })
      alive.kick()
      const held = () => t.db('outbox_jobs').where({ topic: busyTopic }).first()
      for (let i = 0; i < 100 && !(await held())?.claimed_by; i++) await sleep(20)
      expect(await held()).toMatchObject({ status: 'running', claimed_by: expect.any(Number) })
      // What a worker killed in the middle of a job leaves: running, its id, a lease far ahead.
      const [{ id: goneWorker }] = (await t.db.raw("SELECT nextval('outbox_worker_ids')::int AS id")).rows
      const [orphan] = await enqueueJobs(t.db, [{ topic, kind: 'of-gone', payload: {} }])
      await t.db('outbox_jobs').where({ id: orphan.id }).update({ status: 'running', attempts: 1, claimed_by: goneWorker, next_attempt_at: t.db.raw("now() + interval '10 minutes'") })
      starting.start()
      for (let i = 0; i < 100 && (await jobs(topic))[0].status === 'running'; i++) await sleep(20)
      expect(ran).toEqual(['of-gone'])
      expect((await jobs(topic)).map((j) => [j.status, j.attempts])).toEqual([['done', 2]])
      const kept = await held()
      expect(kept.status).toBe('running')
      expect(kept.next_attempt_at.getTime()).toBeGreaterThan(Date.now())
    } finally {
      release()
      await starting.stop()
      await alive.stop()
    }
  })

  it("when the application starts, then mail is one topic of the application's worker and mail_outbox shows the mail jobs", async () => {
    expect(t.app.get('outbox').handler('mail')).toBeDefined()
    const email = `outbox-${crypto.randomUUID().slice(0, 8)}@example.test`
    const job = await enqueueJob(t.db, { topic: 'mail', kind: 'test', payload: { to: email, subject: 'Hello', text: 'Body' } })
    const [row] = await t.db('mail_outbox').where({ id: job.id })
    expect(row).toMatchObject({ recipient: email, subject: 'Hello', text_body: 'Body', html_body: null, status: 'pending', sent_at: null })
    await t.app.get('outbox').deliverDue()
    const [logged] = await t.db('mail_outbox').where({ id: job.id })
    expect(logged.status).toBe('logged')
    expect(logged.sent_at).toBeInstanceOf(Date)
  })
})
