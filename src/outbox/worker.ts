import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { outcomeOfError } from './failures.js'
import { OUTBOX_TABLE } from './jobs.js'
import { WorkerLiveness, reclaimJobsOfGoneWorkers } from './liveness.js'
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
  /** How often the worker looks for this topic's due jobs; 0 = only when asked (deliverDue, kick). */
  pollIntervalMs: number
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
}

const BATCH_SIZE = 20
const DEFAULT_MAX_DELAY_MS = 60 * 60 * 1000
const DEFAULT_LEASE_SECONDS = 15

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
  /** Set by stop() (shutdown): the pass under way claims nothing more and gives back what it has not started. */
  private stopping = false
  private liveness: WorkerLiveness | undefined
  private registering: Promise<void> | undefined
  /** The jobs this worker has claimed and not yet closed (id → attempts), whose leases the heartbeat renews. */
  private held = new Map<number, number>()
  private heartbeat: NodeJS.Timeout | undefined

  constructor(protected options: OutboxWorkerOptions) {}

  register(handler: JobHandler) {
    this.handlers.set(handler.topic, handler)
    return this
  }

  handler(topic: string) {
    return this.handlers.get(topic)
  }

  /** Registers the worker, takes over the jobs of gone workers, then runs what is due. */
  start() {
    this.stopped = false
    this.stopping = false
    this.running = this.ensureLiveness().finally(() => {
      this.running = undefined
      if (!this.stopped) this.pass()
    })
  }

  async stop() {
    this.stopped = true
    this.stopping = true
    clearTimeout(this.timer)
    await this.running
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

  /** Runs the due jobs now in the background (once more after the current pass, if one is running). */
  kick() {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    clearTimeout(this.timer)
    this.pass()
  }

  /** Runs every job that is due now, pass after pass until none is left; returns what happened. */
  async deliverDue(): Promise<DeliveryReport> {
    if (!this.stopped && !this.liveness) await this.ensureLiveness()
    const report = this.emptyReport()
    for (;;) {
      const claimed = this.stopping ? [] : await this.claim()
      if (claimed.length === 0) return report
      this.hold(claimed)
      try {
        for (const [started, job] of claimed.entries()) {
          if (this.stopping) {
            await this.giveBack(claimed.slice(started))
            break
          }
          const label = await this.runOne(job)
          this.letGo(job)
          report[label] = (report[label] ?? 0) + 1
        }
      } finally {
        for (const job of claimed) this.letGo(job)
      }
    }
  }

  /** Claimed jobs not started when the worker stops: due again at once, for any worker, the attempt not counted. */
  private async giveBack(jobs: OutboxJob[]) {
    const { db } = this.options
    await db(OUTBOX_TABLE)
      .where({ status: 'running' })
      .whereIn(['id', 'attempts'], jobs.map((job) => [job.id, job.attempts]))
      .update({ status: 'pending', attempts: db.raw('attempts - 1'), next_attempt_at: db.fn.now(), updated_at: db.fn.now() })
  }

  private hold(jobs: OutboxJob[]) {
    for (const job of jobs) this.held.set(job.id, job.attempts)
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

  private pollIntervalMs() {
    const intervals = [...this.handlers.values()].map((h) => h.pollIntervalMs).filter((ms) => ms > 0)
    return intervals.length ? Math.min(...intervals) : 0
  }

  private schedule() {
    const interval = this.pollIntervalMs()
    if (this.stopped || interval === 0) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.pass(), interval)
    this.timer.unref()
  }

  private pass() {
    this.again = false
    this.running = this.deliverDue()
      .catch((error) => this.options.logger.error({ err: error }, 'outbox worker: a pass over the outbox failed'))
      .finally(() => {
        this.running = undefined
        if (this.again && !this.stopped) this.pass()
        else this.schedule()
      })
  }

  private async claim(): Promise<OutboxJob[]> {
    const topics = [...this.handlers.keys()]
    if (topics.length === 0) return []
    const { db } = this.options
    const result = await db.raw(
      `WITH due AS MATERIALIZED (
         SELECT j.id FROM ${OUTBOX_TABLE} AS j
         WHERE j.status IN ('pending', 'running') AND j.next_attempt_at <= now()
           AND j.topic IN (${topics.map(() => '?').join(', ')})
           AND (j.ordering_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM ${OUTBOX_TABLE} AS earlier
             WHERE earlier.ordering_key = j.ordering_key AND earlier.id < j.id
               AND earlier.status IN ('pending', 'running')))
         ORDER BY j.next_attempt_at, j.id
         LIMIT ?
         FOR UPDATE SKIP LOCKED
       )
       UPDATE ${OUTBOX_TABLE} AS j
       SET status = 'running', attempts = j.attempts + 1, claimed_by = ?,
           next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
       FROM due WHERE j.id = due.id
       RETURNING j.*`,
      [...topics, BATCH_SIZE, this.liveness?.id ?? null, this.leaseSeconds]
    )
    return (result.rows as OutboxJob[]).sort((a, b) => a.id - b.id)
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
