import type { Knex } from 'knex'
import { OUTBOX_TABLE } from './jobs.js'
import type { OutboxJob } from './jobs.js'

export interface SlotLimits {
  /** Jobs of one topic a worker runs at once. */
  perTopic: number
  /** Of those, the jobs of one organization. */
  perOrganization: number
}

/**
 * The jobs a worker runs at once. Each topic has slots of its own, so a topic whose far side is
 * slow (a webhook receiver that never answers) never holds another's work (mail, channel
 * messages); within a topic one organization's jobs take a few slots at most, so one
 * organization's slow receiver never holds another's deliveries. Jobs of no organization count
 * against their topic only.
 */
export class Slots {
  /** Running jobs by topic, then by organization id ('' for none). */
  private running = new Map<string, Map<string, number>>()

  constructor(readonly limits: SlotLimits) {}

  /** How many more jobs of the topic may start now. */
  free(topic: string): number {
    let taken = 0
    for (const count of this.running.get(topic)?.values() ?? []) taken += count
    return this.limits.perTopic - taken
  }

  /** The topic's running jobs per organization, as the claim reads them ({"<organization id>": count}). */
  busy(topic: string): Record<string, number> {
    return Object.fromEntries([...(this.running.get(topic) ?? [])].filter(([organization]) => organization !== ''))
  }

  take(job: OutboxJob) {
    const byOrganization = this.running.get(job.topic) ?? new Map<string, number>()
    this.running.set(job.topic, byOrganization)
    const key = String(job.organization_id ?? '')
    byOrganization.set(key, (byOrganization.get(key) ?? 0) + 1)
  }

  release(job: OutboxJob) {
    const byOrganization = this.running.get(job.topic)
    const key = String(job.organization_id ?? '')
    const left = (byOrganization?.get(key) ?? 0) - 1
    if (left > 0) byOrganization!.set(key, left)
    else byOrganization?.delete(key)
  }
}

export interface ClaimRequest {
  /** The topics with free slots, and how many jobs of each may start (their free slots). */
  lanes: { topic: string; limit: number }[]
  slots: Slots
  workerId: number | null
  leaseSeconds: number
}

export interface Claim {
  jobs: OutboxJob[]
  /** The topics whose candidates filled their limit: more of them may be due, for the slots still free. */
  full: string[]
}

// One topic's due jobs a claim may take, locked: oldest due first, none whose ordering key has an
// earlier job pending or running, none of an organization whose jobs fill its slots already.
const DUE_OF_TOPIC = `SELECT j.id, j.topic, j.organization_id, j.next_attempt_at FROM ${OUTBOX_TABLE} AS j
  WHERE j.status IN ('pending', 'running') AND j.next_attempt_at <= now() AND j.topic = ?
    AND (j.organization_id IS NULL OR coalesce((?::jsonb -> j.topic ->> j.organization_id::text)::int, 0) < ?)
    AND (j.ordering_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM ${OUTBOX_TABLE} AS earlier
      WHERE earlier.ordering_key = j.ordering_key AND earlier.id < j.id
        AND earlier.status IN ('pending', 'running')))
  ORDER BY j.next_attempt_at, j.id
  LIMIT ?
  FOR UPDATE SKIP LOCKED`

/**
 * Claims due jobs for the free slots of every topic in one statement: FOR UPDATE SKIP LOCKED takes
 * jobs no other worker holds, and the claimed ones move to 'running' under a lease. Of the locked
 * candidates, each organization gets only the slots it has left (a window over them: Postgres
 * allows no window function beside FOR UPDATE), so when one organization's jobs fill a topic's
 * candidates, the claim takes fewer jobs than the topic has slots and names the topic as full:
 * claimed again, that organization is passed over.
 */
export async function claimDue(db: Knex, request: ClaimRequest): Promise<Claim> {
  const { lanes, slots } = request
  const busy = JSON.stringify(Object.fromEntries(lanes.map(({ topic }) => [topic, slots.busy(topic)])))
  const cap = slots.limits.perOrganization
  const result = await db.raw(
    `WITH due AS MATERIALIZED (${lanes.map((_, i) => `SELECT * FROM (${DUE_OF_TOPIC}) AS due${i}`).join(' UNION ALL ')}),
     chosen AS (
       SELECT ranked.id FROM (
         SELECT due.id, due.topic, due.organization_id,
                row_number() OVER (PARTITION BY due.topic, due.organization_id ORDER BY due.next_attempt_at, due.id) AS nth
         FROM due
       ) AS ranked
       WHERE ranked.organization_id IS NULL
          OR ranked.nth + coalesce((?::jsonb -> ranked.topic ->> ranked.organization_id::text)::int, 0) <= ?
     )
     UPDATE ${OUTBOX_TABLE} AS j
     SET status = 'running', attempts = j.attempts + 1, claimed_by = ?,
         next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
     FROM chosen WHERE j.id = chosen.id
     RETURNING j.*, (SELECT json_object_agg(c.topic, c.n) FROM (SELECT topic, count(*) AS n FROM due GROUP BY topic) AS c) AS candidates`,
    [...lanes.flatMap(({ topic, limit }) => [topic, busy, cap, limit]), busy, cap, request.workerId, request.leaseSeconds]
  )
  const rows = result.rows as (OutboxJob & { candidates: Record<string, number> })[]
  const candidates = rows[0]?.candidates ?? {}
  return {
    jobs: rows.map(({ candidates: _, ...job }) => job as OutboxJob).sort((a, b) => a.id - b.id),
    full: lanes.filter(({ topic, limit }) => Number(candidates[topic] ?? 0) >= limit).map(({ topic }) => topic)
  }
}
