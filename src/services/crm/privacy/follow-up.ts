import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { enqueueJob } from '../../../outbox/index.js'
import type { JobOutcome, OutboxJob } from '../../../outbox/index.js'
import { DELIVERY_TOPIC } from '../../inbox/channels/delivery.js'
import { WEBHOOK_TOPIC } from '../../../webhook-events.js'
import { isValidKey } from '../../../storage/storage.js'

/** The outbox topic of the work that removes data for good: retention passes, erasures' follow-ups, stored files. */
export const PURGE_TOPIC = 'purge'

/** What an erasure leaves to do once it has committed: outside the database, or in the outbox itself. */
export interface ErasureFollowUp {
  storage_keys: string[]
  message_ids: number[]
  delivery_ids: number[]
}

/** Written in the erasure's transaction, so the follow-up exists exactly when the erasure does, and a crash retries it. */
export async function enqueueErasureFollowUp(trx: Knex.Transaction, organizationId: number, followUp: ErasureFollowUp) {
  if (!followUp.storage_keys.length && !followUp.message_ids.length && !followUp.delivery_ids.length) return
  await enqueueJob(trx, { topic: PURGE_TOPIC, kind: 'erased-contact', organizationId, payload: { ...followUp } })
}

/** Stored files of rows a purge pass removed, deleted once its transaction has committed. */
export async function enqueueFileDeletion(trx: Knex.Transaction, organizationId: number, keys: string[]) {
  if (keys.length === 0) return
  await enqueueJob(trx, { topic: PURGE_TOPIC, kind: 'files', organizationId, payload: { storage_keys: keys } })
}

/**
 * A follow-up job: the files go from storage (local disk or S3; an absent one is no error, so a
 * retry is safe), then the outbox jobs of the erased messages and webhook deliveries, whose
 * results and errors may quote the person (a provider's refusal names the number). A job still
 * running is left to finish: it finds its message or delivery gone and sends nothing.
 */
export async function runFollowUp(app: Application, job: OutboxJob<Partial<ErasureFollowUp>>): Promise<JobOutcome> {
  const storage = app.get('storage')
  for (const key of job.payload.storage_keys ?? []) if (isValidKey(key)) await storage.delete(key)
  const db = app.get('knex')
  await deleteJobsOf(db, job.organization_id!, DELIVERY_TOPIC, 'message_id', job.payload.message_ids ?? [])
  await deleteJobsOf(db, job.organization_id!, WEBHOOK_TOPIC, 'delivery_id', job.payload.delivery_ids ?? [])
  return { status: 'done', label: 'purged' }
}

async function deleteJobsOf(db: Knex, organizationId: number, topic: string, field: string, ids: number[]) {
  if (ids.length === 0) return
  await db('outbox_jobs').where({ organization_id: organizationId, topic }).whereNot('status', 'running')
    .whereRaw(`(payload->>'${field}')::bigint = ANY(?::bigint[])`, [ids]).delete()
}
