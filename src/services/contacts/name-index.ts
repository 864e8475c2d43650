import type { Knex } from 'knex'
import { runInBackground } from '../../background.js'
import type { BackgroundRunner } from '../../background.js'
import type { Application } from '../../declarations.js'

/** Pending rows one drain starts from: a larger batch touches each index page for more entries at once. */
export const NAME_INDEX_BATCH = 5000
/** The wait between drains while nothing is pending. */
const NAME_INDEX_INTERVAL_MS = 200
/** Pending rows above which writes of contacts wait for the drain before they answer. */
export const NAME_INDEX_BACKLOG = 20_000
/** Rows drained between two vacuums of the pending table, or fewer once it is empty. */
const VACUUM_AFTER = 20_000
const VACUUM_WHEN_EMPTY = 1000
/** The longest a write waits for the drain: a drain that cannot run must not stop the writes. */
const MAX_WAIT_MS = 5_000

/**
 * Brings the name-search grams up to date for the contacts of the first `most` pending rows (all
 * of them with null). Returns how many rows it took (every row of those contacts, so it may be
 * more than `most`; 0 when another drain holds the lock) and how many are left at most
 * (migration 20261127120000 has the rules). The search is exact whether or not this has run.
 */
export async function drainNameIndex(db: Knex, most: number | null = NAME_INDEX_BATCH): Promise<{ drained: number; pending: number }> {
  const { rows } = await db.raw('SELECT drained, pending FROM contact_name_index_drain(?::integer)', [most])
  return { drained: Number(rows[0].drained), pending: Number(rows[0].pending) }
}

/**
 * How far the index is behind, as the last drain saw it, so that writes can wait when it falls
 * far behind: the writes that outrun the drain (a long import) then go at its pace instead of
 * leaving a backlog that every name search of the organization reads.
 */
export class NameIndexBacklog {
  private pending = 0
  private waiting: (() => void)[] = []

  /** Pending rows above which writes wait (tests lower it). */
  constructor(public limit = NAME_INDEX_BACKLOG) {}

  /** What a drain found left; 0 when unknown (a failed or paused drain must not hold writes). */
  report(pending: number) {
    this.pending = pending
    if (pending > this.limit) return
    for (const resolve of this.waiting.splice(0)) resolve()
  }

  /** Resolves once the backlog is under the limit, or after MAX_WAIT_MS. */
  async caughtUp() {
    if (this.pending <= this.limit) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, MAX_WAIT_MS)
      this.waiting.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }
}

declare module '../../declarations.js' {
  interface Configuration {
    /** The drain of the contact name index (tests pause it to search with contacts pending). */
    contactNameIndex: BackgroundRunner
  }
}

/**
 * Drains the pending contacts in the background for as long as the application runs, and
 * vacuums contact_name_pending every so many rows drained: it is a queue, and every
 * name search reads its organization's range of it, which would otherwise walk the index entries
 * of rows long drained until autovacuum came by.
 */
export const contactNameIndex = (app: Application, backlog: NameIndexBacklog) => {
  let drainedSinceVacuum = 0
  const drain = runInBackground(app, {
    name: 'indexing contact names',
    intervalMs: NAME_INDEX_INTERVAL_MS,
    pass: async () => {
      try {
        const { drained, pending } = await drainNameIndex(app.get('knex'))
        backlog.report(pending)
        drainedSinceVacuum += drained
        if (drainedSinceVacuum >= VACUUM_AFTER || (pending === 0 && drainedSinceVacuum >= VACUUM_WHEN_EMPTY)) {
          drainedSinceVacuum = 0
          await app.get('knex').raw('VACUUM contact_name_pending')
        }
        return drained > 0 && pending > 0
      } catch (error) {
        backlog.report(0)
        throw error
      }
    }
  })
  app.set('contactNameIndex', {
    pause: async () => {
      await drain.pause()
      backlog.report(0)
    },
    resume: drain.resume
  })
}
