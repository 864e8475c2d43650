import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { outcomeOfError } from './failures.js'
import { OUTBOX_TABLE } from './jobs.js'
import { WorkerLiveness, reclaimJobsOfGoneWorkers } from './liveness.js'
import { Slots, claimDue } from './slots.js'
import type { OutboxJob } from './jobs.js'

/** What a handler made of one run of a job. */
export type JobOutcome =
  /** Finished; label (default 'done') becomes the job's status and its count in the report. */
  | { status: 'done'; label?: string; result?: Record<string, unknown> }
  /** Try again later: after retryAfterMs when the far side said so, otherwise after the backoff. */
  | { status: 'retry'; error: string; retryAfterMs?: number }
  /** Give up now (a refusal that no retry can change). */
  | { status: 'failed'; error: string; result?: Record<string, unknown> }

export interface JobHandler {
  topic: string
  /** Runs before this one is given up; a 'retry' outcome or a transient thrown error counts as a failed attempt (failures.ts). */
  maxAttempts: number
  /** Wait after the first failed attempt; doubled after each further one, up to maxDelayMs. */
  retryBaseMs: number
  /** Longest wait between two attempts (default one hour). */
  maxDelayMs?: number
  /** The labels of 'done' outcomes, so that a report shows them at zero too. */
  labels?: string[]
  run(job: OutboxJob): Promise<JobOutcome>
  /** Called once when a job is given up (after its last attempt or on a 'failed' outcome). */
  onFailed?(job: OutboxJob, error: string): Promise<void>
}

/** Counts of what one deliverDue did, by outcome label ('done', 'sent'...), plus 'retrying' and 'failed'. */
export type DeliveryReport = Record<string, number> & { retrying: number; failed: number }

export interface OutboxWorkerOptions {
  db: Knex
  logger: Logger
  /**
   * A claimed job belongs to its worker for this long, renewed while the worker holds it; should
   * the worker hang or lose the database, another takes the job over once the lease has run out.
   */
  leaseSeconds?: number
  /** Jobs of one topic the worker runs at once (slots.ts). */
  concurrency?: number
  /** Of those, the jobs of one organization. */
  concurrencyPerOrganization?: number
  /** How often the worker looks for due jobs of every topic (retries come due); 0 = only when asked (deliverDue, kick). */
  pollIntervalMs?: number
}

const DEFAULT_MAX_DELAY_MS = 60 * 60 * 1000
const DEFAULT_LEASE_SECONDS = 15
const DEFAULT_CONCURRENCY = 8
const DEFAULT_CONCURRENCY_PER_ORGANIZATION = 2

/**
 * The one background worker of the service: drains the transactional outbox (table outbox_jobs)
 * for every registered topic — mail, channel messages, webhook deliveries.
 *
 * Several instances may run at once. A claim is one statement that locks due jobs with FOR UPDATE
 * SKIP LOCKED and moves them to 'running' under a lease, so a job is claimed by exactly one
 * worker; the handler runs after the claim has committed (no transaction held open during network
 * calls) and the outcome is recorded only while the claim is still that worker's. Jobs sharing an
 * ordering key run one at a time, oldest first: a job waits while an earlier one of its key is
 * pending or running (retries included), so a receiver sees them in the order they happened.
 *
 * Jobs run concurrently in slots (slots.ts): each topic has its own, and one organization's jobs
 * take a few of a topic's at most. A worker claims only what it starts at once, and claims again
 * whenever a job ends, a commit kicks it or its poll comes round.
 *
 * A claim's lease is short and renewed (a heartbeat every third of it) while the worker holds the
 * job, so a job whose worker is gone waits a lease at most. A started worker also registers with
 * a lock that ends with its process (liveness.ts) and marks its claims with its id: a process
 * that starts takes the jobs of gone workers over at once. A job taken over may be sent twice
 * when its worker died between the far side's acceptance and the record of it, once at most.
 */
export class OutboxWorker {
  private handlers = new Map<string, JobHandler>()
  private timer: NodeJS.Timeout | undefined
  private running: Promise<unknown> | undefined
  private again = false
  private stopped = true
  /** Set by stop() (shutdown): nothing more is claimed; the jobs under way finish. */
  private stopping = false
  private liveness: WorkerLiveness | undefined
  private registering: Promise<void> | undefined
  /** The jobs this worker has claimed and not yet closed (id → attempts), whose leases the heartbeat renews. */
  private held = new Map<number, number>()
  private heartbeat: NodeJS.Timeout | undefined
  private slots: Slots
  /** Every job under way, whichever call started it: stop() waits for them. */
  private underWay = new Set<Promise<void>>()
  /** Passes waiting for a job to end or a kick, to claim again. */
  private waiting = new Set<() => void>()
  /** Claims of this worker run one at a time, so two passes never fill the same free slot. */
  private claiming: Promise<unknown> = Promise.resolve()

  constructor(protected options: OutboxWorkerOptions) {
    this.slots = new Slots({
      perTopic: options.concurrency ?? DEFAULT_CONCURRENCY,
      perOrganization: options.concurrencyPerOrganization ?? DEFAULT_CONCURRENCY_PER_ORGANIZATION
    })
  }

  register(handler: JobHandler) {
    this.handlers.set(handler.topic, handler)
    return this
  }

  handler(topic: string) {
    return this.handlers.get(topic)
  }

  /** Registers the worker, takes over the jobs of gone workers, then runs what is due, and polls. */
  start() {
    this.stopped = false
    this.stopping = false
    this.running = this.ensureLiveness().finally(() => {
      this.running = undefined
      if (!this.stopped) this.pass()
    })
    this.schedule()
  }

  /** Resolves once the start-up pass, and any pass it led to, has ended. */
  async settled() {
    while (this.running) await this.running
  }

  async stop() {
    this.stopped = true
    this.stopping = true
    clearTimeout(this.timer)
    await this.running
    await Promise.allSettled([...this.underWay])
    const liveness = this.liveness
    this.liveness = undefined
    await liveness?.end()
  }

  private get leaseSeconds() {
    return this.options.leaseSeconds ?? DEFAULT_LEASE_SECONDS
  }

  /** One registration at a time (a pass and a direct deliverDue may both find the worker without one). */
  private ensureLiveness() {
    this.registering ??= this.registerLiveness().finally(() => {
      this.registering = undefined
    })
    return this.registering
  }

  private async registerLiveness() {
    const { db, logger } = this.options
    try {
      const liveness = await WorkerLiveness.register(db, (error) => {
        if (this.liveness !== liveness) return
        this.liveness = undefined
        logger.warn({ err: error, worker: liveness.id }, 'outbox: the worker lost its lock; it registers again on the next pass')
      })
      this.liveness = liveness
      const reclaimed = await reclaimJobsOfGoneWorkers(db, liveness.id)
      if (reclaimed) logger.warn({ reclaimed, worker: liveness.id }, 'outbox: running jobs of workers that are gone taken over')
    } catch (error) {
      logger.error({ err: error }, 'outbox: the worker could not register; its claims last their lease')
    }
  }

  /** Runs the due jobs as soon as the transaction has committed (a rolled-back one wrote none). */
  kickAfterCommit(trx: Knex | Knex.Transaction | undefined) {
    const committed = (trx as Knex.Transaction | undefined)?.executionPromise
    if (committed) committed.then(() => this.kick(), () => {})
    else this.kick()
  }

  /** Runs the due jobs now in the background: the pass under way claims again (and once more after it ends). */
  kick() {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      this.wake()
      return
    }
    this.pass()
  }

  /**
   * Runs every job that is due now, in free slots, claiming again as jobs end until none is due
   * and the jobs this process has under way have ended; returns what its own jobs did.
   */
  async deliverDue(): Promise<DeliveryReport> {
    if (!this.stopped && !this.liveness) await this.ensureLiveness()
    const report = this.emptyReport()
    const mine = new Set<Promise<void>>()
    for (;;) {
      // A job that ends while the claim runs frees its slot after the claim counted it: claim again.
      let woken = false
      const changed = new Promise<void>((resolve) => {
        this.waiting.add(() => {
          woken = true
          resolve()
        })
      })
      if (!this.stopping) await this.claimForFreeSlots((job) => mine.add(this.launch(job, report, mine)))
      if (mine.size === 0 && (!woken || this.stopping)) {
        // A job another pass of this process claimed first (the kick after a commit) ends before
        // this call returns too: whoever asked for the due jobs sees their outcome.
        if (this.stopping || this.underWay.size === 0) return report
        await Promise.race(this.underWay)
        continue
      }
      await changed
    }
  }

  /** Wakes the passes waiting to claim again. */
  private wake() {
    const waiting = [...this.waiting]
    this.waiting.clear()
    for (const resolve of waiting) resolve()
  }

  /**
   * Fills the free slots of every topic with due jobs, one claim for all topics, starting each job
   * as it is claimed; claims again for the topics whose candidates one organization filled.
   */
  private claimForFreeSlots(start: (job: OutboxJob) => void): Promise<void> {
    const claimed = this.claiming.then(async () => {
      let topics = [...this.handlers.keys()]
      while (!this.stopping) {
        const lanes = topics.map((topic) => ({ topic, limit: this.slots.free(topic) })).filter(({ limit }) => limit > 0)
        if (lanes.length === 0) return
        const { jobs, full } = await claimDue(this.options.db, { lanes, slots: this.slots, workerId: this.liveness?.id ?? null, leaseSeconds: this.leaseSeconds })
        for (const job of jobs) start(job)
        topics = full
      }
    })
    this.claiming = claimed.catch(() => {})
    return claimed
  }

  /** Runs one claimed job in its slot, under a renewed lease; when it ends, waiting passes claim again. */
  private launch(job: OutboxJob, report: DeliveryReport, mine: Set<Promise<void>>): Promise<void> {
    this.slots.take(job)
    this.hold(job)
    const run: Promise<void> = this.runOne(job)
      .then(
        (label) => {
          report[label] = (report[label] ?? 0) + 1
        },
        (error) => this.options.logger.error({ err: error, outbox_id: job.id, topic: job.topic }, 'outbox: the outcome of a job was not recorded; it runs again once its lease has run out')
      )
      .finally(() => {
        this.slots.release(job)
        this.letGo(job)
        mine.delete(run)
        this.underWay.delete(run)
        this.wake()
      })
    this.underWay.add(run)
    return run
  }

  private hold(job: OutboxJob) {
    this.held.set(job.id, job.attempts)
    if (this.heartbeat) return
    this.heartbeat = setInterval(() => void this.renewLeases(), (this.leaseSeconds * 1000) / 3)
    this.heartbeat.unref()
  }

  private letGo(job: OutboxJob) {
    this.held.delete(job.id)
    if (this.held.size > 0) return
    clearInterval(this.heartbeat)
    this.heartbeat = undefined
  }

  /** The heartbeat: the jobs still held keep their claim for another lease. */
  private async renewLeases() {
    const { db, logger } = this.options
    const held = [...this.held.entries()]
    if (held.length === 0) return
    await db(OUTBOX_TABLE)
      .where({ status: 'running' })
      .whereIn(['id', 'attempts'], held)
      .update({ next_attempt_at: db.raw('now() + make_interval(secs => ?)', [this.leaseSeconds]) })
      .catch((error) => logger.warn({ err: error, jobs: held.length }, 'outbox: leases not renewed'))
  }

  private emptyReport(): DeliveryReport {
    const report: DeliveryReport = { retrying: 0, failed: 0 }
    for (const handler of this.handlers.values()) for (const label of handler.labels ?? ['done']) report[label] = 0
    return report
  }

  /** The poll: a kick every interval, also while a pass runs long jobs (retries come due meanwhile). */
  private schedule() {
    const interval = this.options.pollIntervalMs ?? 0
    if (this.stopped || interval === 0) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.kick()
      this.schedule()
    }, interval)
    this.timer.unref()
  }

  private pass() {
    this.again = false
    this.running = this.deliverDue()
      .catch((error) => this.options.logger.error({ err: error }, 'outbox worker: a pass over the outbox failed'))
      .finally(() => {
        this.running = undefined
        if (this.again && !this.stopped) this.pass()
      })
  }

  private async runOne(job: OutboxJob): Promise<string> {
    const handler = this.handlers.get(job.topic)!
    let outcome: JobOutcome
    try {
      outcome = await handler.run(job)
    } catch (error) {
      outcome = outcomeOfError(error)
    }
    const { logger, db } = this.options
    const log = { outbox_id: job.id, topic: job.topic, kind: job.kind, attempts: job.attempts }
    if (outcome.status === 'done') {
      const label = outcome.label ?? 'done'
      await this.mark(job, { status: label, result: outcome.result ? JSON.stringify(outcome.result) : null, last_error: null, done_at: db.fn.now() })
      logger.info(log, `outbox: ${job.topic} ${label}`)
      return label
    }
    const error = outcome.error.slice(0, 1000)
    if (outcome.status === 'failed' || job.attempts >= handler.maxAttempts) {
      const result = outcome.status === 'failed' && outcome.result ? JSON.stringify(outcome.result) : null
      if (await this.mark(job, { status: 'failed', last_error: error, result, done_at: db.fn.now() })) {
        logger.error({ ...log, err: error }, `outbox: ${job.topic} failed for good`)
        await handler.onFailed?.(job, error).catch((err) => logger.error({ ...log, err }, `outbox: ${job.topic} failure handler failed`))
      }
      return 'failed'
    }
    const backoffMs = Math.min(handler.retryBaseMs * 2 ** (job.attempts - 1), handler.maxDelayMs ?? DEFAULT_MAX_DELAY_MS)
    const delayMs = Math.max(backoffMs, outcome.retryAfterMs ?? 0)
    await this.mark(job, { status: 'pending', last_error: error, next_attempt_at: db.raw('now() + make_interval(secs => ?)', [delayMs / 1000]) })
    logger.warn({ ...log, retry_in_ms: delayMs, err: error }, `outbox: ${job.topic} not done; will retry`)
    return 'retrying'
  }

  /** Records the outcome, only while the claim is still this worker's (same attempt, still running). */
  private async mark(job: OutboxJob, changes: Record<string, unknown>): Promise<boolean> {
    const updated = await this.options.db(OUTBOX_TABLE)
      .where({ id: job.id, status: 'running', attempts: job.attempts })
      .update({ ...changes, updated_at: this.options.db.fn.now() })
    return updated > 0
  }
}
