import type { Knex } from 'knex'

/**
 * One piece of background work, written in the transaction of the change that causes it: an
 * e-mail, a channel message to deliver, a webhook event to post. The worker runs it after the
 * change has committed, so the work exists exactly when the change does and never slows or fails it.
 */
export interface OutboxJobInput {
  /** Which handler runs the job ('mail', 'channel-message', 'webhook'). */
  topic: string
  /** What the job is about within its topic, e.g. 'invitation' or 'contacts.created' (for the log and operators). */
  kind: string
  organizationId?: number | null
  payload: Record<string, unknown>
  /** Jobs sharing a key run one at a time, in the order they were written. */
  orderingKey?: string | null
  /** Not before this time (default: now). */
  runAt?: Date
}

/**
 * 'pending' waits for its turn (first run or retry), 'running' is claimed by a worker under a
 * lease, 'failed' was given up; a finished job carries its handler's outcome label ('done',
 * 'sent', 'logged', 'delivered'...).
 */
export type OutboxJobStatus = 'pending' | 'running' | 'failed' | (string & {})

export interface OutboxJob<Payload = Record<string, any>> {
  id: number
  organization_id: number | null
  topic: string
  kind: string
  payload: Payload
  ordering_key: string | null
  status: OutboxJobStatus
  attempts: number
  next_attempt_at: Date
  last_error: string | null
  result: Record<string, any> | null
  created_at: Date
  updated_at: Date
  done_at: Date | null
}

export const OUTBOX_TABLE = 'outbox_jobs'

/** Writes jobs in one statement. Pass the transaction of the change that causes them. */
export async function enqueueJobs(trx: Knex | Knex.Transaction, jobs: OutboxJobInput[]): Promise<OutboxJob[]> {
  if (jobs.length === 0) return []
  const rows = await trx(OUTBOX_TABLE)
    .insert(
      jobs.map((job) => ({
        topic: job.topic,
        kind: job.kind,
        organization_id: job.organizationId ?? null,
        payload: JSON.stringify(job.payload),
        ordering_key: job.orderingKey ?? null,
        next_attempt_at: job.runAt ?? trx.fn.now()
      }))
    )
    .returning('*')
  return rows as OutboxJob[]
}

/** Writes one job. Pass the transaction of the change that causes it. */
export async function enqueueJob(trx: Knex | Knex.Transaction, job: OutboxJobInput): Promise<OutboxJob> {
  const [row] = await enqueueJobs(trx, [job])
  return row
}
