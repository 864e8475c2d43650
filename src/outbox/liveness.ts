import type { Knex } from 'knex'
import pg from 'pg'
import { isEmbedded } from '../db.js'
import { OUTBOX_TABLE } from './jobs.js'

// The first key of the workers' advisory locks: negative, so never an organization id (the first
// key of the transaction locks elsewhere); the second key is the worker's id.
const WORKER_LOCKS = -7305314

/**
 * A worker's proof of life, which ends with its process: a session advisory lock on
 * (WORKER_LOCKS, id), the id taken from a sequence. Postgres drops the lock the moment the session
 * ends, so a kill -9 frees it at once, where a lease must run out. On a Postgres server the lock
 * has a connection of its own (the pool's come and go); embedded Postgres has one session, which
 * lives exactly as long as the process.
 */
export class WorkerLiveness {
  private constructor(
    readonly id: number,
    private release: () => Promise<unknown>
  ) {}

  /** onLost: the lock's connection broke (the lock is gone with it). */
  static async register(db: Knex, onLost: (error: Error) => void): Promise<WorkerLiveness> {
    const { rows } = await db.raw("SELECT nextval('outbox_worker_ids')::int AS id")
    const id: number = rows[0].id
    if (isEmbedded(db)) {
      await db.raw('SELECT pg_advisory_lock(?::int, ?::int)', [WORKER_LOCKS, id])
      return new WorkerLiveness(id, () => db.raw('SELECT pg_advisory_unlock(?::int, ?::int)', [WORKER_LOCKS, id]))
    }
    const client = new pg.Client((db.client as unknown as { connectionSettings: pg.ClientConfig }).connectionSettings)
    client.on('error', onLost)
    await client.connect()
    try {
      await client.query('SELECT pg_advisory_lock($1::int, $2::int)', [WORKER_LOCKS, id])
    } catch (error) {
      await client.end()
      throw error
    }
    return new WorkerLiveness(id, () => client.end())
  }

  async end() {
    await this.release().catch(() => {})
  }
}

/**
 * Makes the running jobs of workers whose lock is gone due now, rather than when their lease
 * runs out; answers how many. Jobs claimed without a worker id keep their lease.
 */
export async function reclaimJobsOfGoneWorkers(db: Knex, self: number): Promise<number> {
  return db(OUTBOX_TABLE)
    .where({ status: 'running' })
    .whereNot('claimed_by', self)
    .where('next_attempt_at', '>', db.fn.now())
    .whereNotExists(
      db('pg_locks').select(db.raw('1'))
        .where({ locktype: 'advisory', objsubid: 2, granted: true })
        // pg_locks lists every database of the server; worker ids are only unique within one.
        .whereRaw('database = (SELECT oid FROM pg_database WHERE datname = current_database())')
        .whereRaw('classid = ?::int::oid', [WORKER_LOCKS])
        .whereRaw(`objid = ${OUTBOX_TABLE}.claimed_by::oid`)
    )
    .update({ next_attempt_at: db.fn.now() })
}
