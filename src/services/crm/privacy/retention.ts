import { setImmediate as turn } from 'node:timers/promises'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { enqueueJob } from '../../../outbox/index.js'
import type { JobOutcome, OutboxJob } from '../../../outbox/index.js'
import { PURGE_TOPIC, enqueueFileDeletion } from './follow-up.js'
import { purgePlan } from './purge-plan.js'
import type { PurgedTable } from './purge-plan.js'

/**
 * Rows one transaction removes: sized, batch after batch, to take about BATCH_MS, so that it holds
 * its row locks (and, on embedded Postgres, the one connection) for that long, whatever the table.
 */
const BATCH = { first: 100, least: 10, most: 2000 }
const BATCH_MS = 25
/** How long one job works before it leaves the rest to a job after it, so that shutdowns and other work never wait long. */
const JOB_BUDGET_MS = 5000

export const PURGE_KIND = 'deleted-records'
const orderingKeyOf = (organizationId: number) => `purge:${organizationId}`

/** Older than the organization's retention, as SQL over a timestamp column. */
const pastRetention = (column: string, days: string) => `${column} <= now() - make_interval(days => ${days})`

/**
 * One retention job: the organization's soft-deleted records older than its retention
 * (organizations.deleted_retention_days; 0 keeps them) go for good, table by table, in batches
 * of their own transactions; so do its finished webhook deliveries of that age. A job that runs
 * out of time writes the next one, which runs after it.
 */
export async function runRetentionPass(app: Application, job: OutboxJob): Promise<JobOutcome> {
  const db = app.get('knex')
  const organizationId = job.organization_id!
  const organization = await db('organizations').first('deleted_retention_days').where('id', organizationId)
  if (!organization || organization.deleted_retention_days === 0) return { status: 'done', label: 'purged', result: { removed: 0 } }
  const deadline = Date.now() + JOB_BUDGET_MS
  const days = organization.deleted_retention_days as number
  let removed = 0
  for (const table of await purgePlan(db)) {
    const { count, finished } = await purgeTable(db, table, organizationId, days, deadline)
    removed += count
    if (!finished) return continueLater(app, organizationId, removed)
  }
  const deliveries = await purgeDeliveries(db, organizationId, days, deadline)
  removed += deliveries.count
  if (!deliveries.finished) return continueLater(app, organizationId, removed)
  return { status: 'done', label: 'purged', result: { removed } }
}

async function continueLater(app: Application, organizationId: number, removed: number): Promise<JobOutcome> {
  await enqueueJob(app.get('knex'), { topic: PURGE_TOPIC, kind: PURGE_KIND, organizationId, payload: {}, orderingKey: orderingKeyOf(organizationId) })
  return { status: 'done', label: 'purged', result: { removed, continued: true } }
}

async function purgeTable(db: Knex, table: PurgedTable, organizationId: number, days: number, deadline: number) {
  let count = 0
  let size = BATCH.first
  for (;;) {
    if (Date.now() >= deadline) return { count, finished: false }
    const started = performance.now()
    const batch = await db.transaction((trx) => purgeBatch(trx, table, organizationId, days, size))
    const tookMs = performance.now() - started
    // Embedded Postgres runs on this thread: between batches, requests waiting for it get their turn.
    await turn()
    count += batch
    if (batch < size) return { count, finished: true }
    size = nextSize(size, tookMs)
  }
}

/** The next batch's size: twice as many rows while a batch takes under half its time, half as many once it takes more. */
const nextSize = (size: number, tookMs: number) =>
  tookMs < BATCH_MS / 2 ? Math.min(size * 2, BATCH.most) : tookMs > BATCH_MS ? Math.max(Math.floor(size / 2), BATCH.least) : size

/**
 * One batch of a table: the oldest due rows that nothing still needs (a reference that cannot be
 * cleared holds its row until the referencing row goes itself), locked; references to them
 * cleared (or their dependants without history of their own deleted); the rows deleted, their
 * stored files left to a job after the commit.
 */
async function purgeBatch(trx: Knex.Transaction, table: PurgedTable, organizationId: number, days: number, size: number): Promise<number> {
  const held = table.references.filter((reference) => reference.action === 'wait')
    // The organization as a value, not t's column: Citus routes (and locks) only a statement whose
    // every table it can see restricted to one organization.
    .map((reference) => `NOT EXISTS (SELECT 1 FROM ${reference.table} r WHERE r.organization_id = ${Number(organizationId)} AND r.${reference.column} = t.id)`)
  const { rows } = await trx.raw(
    `SELECT t.id FROM ${table.name} t
      WHERE t.organization_id = ? AND t.deleted_at IS NOT NULL AND ${pastRetention('t.deleted_at', '?')}
        ${held.map((condition) => `AND ${condition}`).join(' ')}
      ORDER BY t.deleted_at LIMIT ? FOR UPDATE OF t SKIP LOCKED`,
    [organizationId, days, size]
  )
  const ids: number[] = rows.map((row: { id: number }) => row.id)
  if (ids.length === 0) return 0
  for (const reference of table.references) {
    const referencing = trx(reference.table).where('organization_id', organizationId).whereIn(reference.column, ids)
    if (reference.action === 'clear') {
      await referencing.update({ ...Object.fromEntries(reference.cleared.map((column) => [column, null])), updated_at: trx.fn.now() })
    } else if (reference.action === 'delete') {
      await referencing.delete()
    }
  }
  const deleted: { storage_key?: string }[] = await trx(table.name).where('organization_id', organizationId).whereIn('id', ids)
    .delete().returning(table.storageKey ? ['id', 'storage_key'] : ['id'])
  await enqueueFileDeletion(trx, organizationId, deleted.map((row) => row.storage_key).filter((key): key is string => Boolean(key)))
  return ids.length
}

/** The delivery log keeps the payloads it posted for the retention period too; pending deliveries stay. */
async function purgeDeliveries(db: Knex, organizationId: number, days: number, deadline: number) {
  let count = 0
  for (;;) {
    if (Date.now() >= deadline) return { count, finished: false }
    // Ids grow with time: the oldest deliveries are the first of the organization's key range.
    const removed: unknown[] = await db('webhook_deliveries').where('organization_id', organizationId).whereIn('id', db('webhook_deliveries')
      .select('id').where('organization_id', organizationId).whereNot('status', 'pending').whereRaw(pastRetention('created_at', '?'), [days])
      .orderBy('id').limit(BATCH.first)).delete().returning('id')
    await turn()
    count += removed.length
    if (removed.length < BATCH.first) return { count, finished: true }
  }
}

/**
 * Writes a retention job for every organization that has records past its retention and no such
 * job waiting yet, in two statements: the organizations with due rows (each table's deleted rows
 * joined to their organization's retention), then their jobs. Apart because on Citus the first
 * reads the distributed tables' shards and the outbox is the coordinator's own table, which no
 * statement may join to them.
 */
export async function enqueueDuePurges(db: Knex): Promise<number> {
  const due = (await purgePlan(db)).map((table) =>
    `SELECT t.organization_id FROM ${table.name} t JOIN organizations o ON o.id = t.organization_id
      WHERE o.deleted_retention_days > 0 AND t.deleted_at IS NOT NULL AND ${pastRetention('t.deleted_at', 'o.deleted_retention_days')}`)
  due.push(`SELECT d.organization_id FROM webhook_deliveries d JOIN organizations o ON o.id = d.organization_id
      WHERE o.deleted_retention_days > 0 AND ${pastRetention('d.created_at', 'o.deleted_retention_days')}`)
  const { rows: organizations } = await db.raw(due.join(' UNION '))
  if (organizations.length === 0) return 0
  const { rows } = await db.raw(
    `INSERT INTO outbox_jobs (topic, kind, organization_id, payload, ordering_key)
     SELECT ?, ?, o.id, '{}'::jsonb, 'purge:' || o.id FROM unnest(?::int[]) AS o(id)
      WHERE NOT EXISTS (SELECT 1 FROM outbox_jobs j WHERE j.ordering_key = 'purge:' || o.id AND j.status IN ('pending', 'running'))
     RETURNING id`,
    [PURGE_TOPIC, PURGE_KIND, organizations.map((row: { organization_id: number }) => row.organization_id)]
  )
  return rows.length
}
