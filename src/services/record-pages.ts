import { LRUCache } from 'lru-cache'
import { perDatabase } from './record-texts.js'

/**
 * Whole list pages that wire pages sent recently (wire-pages.ts), each kept with the change mark
 * (migration 20261126000200) of every table the page was read from, read before the page: its
 * own table, the tables of its relations and, for a resource with custom fields, their
 * definitions. The mark only grows, and it moves when a write to any row of those tables of the
 * organization (or to a user, for relations to users) commits. A request for the same page (the
 * same compiled statement and values) reads the mark, one small named statement, and where it
 * has not moved since, no row the page could show, count or order by has changed: the kept page
 * is answered as it was. Otherwise the page is read as before (its keys, then the records' texts,
 * record-texts.ts) and kept under the mark read first: a write that commits while the page is
 * read moves the mark past the kept one, so such a page is read again next time, never trusted.
 *
 * Only where every one of those tables counts its writes (their triggers are checked once per
 * list's tables), and never for relations computed by a subquery of other tables.
 *
 * Where the mark moves faster than pages are asked again (an organization writing the list's
 * tables many times a second), reading it is one statement more per page for nothing: each
 * organization's list counts, over its last YIELD_WINDOW lookups of pages it had kept, how many
 * were still current, and below MIN_HIT_RATE the pages of that list are neither looked up nor
 * kept for PAUSE_MS; then they are tried again (reading the mark costs about a quarter of what a
 * hit saves). Pages not kept yet do not count: a list's pages are kept as they are first asked.
 * A page is keyed by its statement (one per service, relations and shape of list query) and the
 * call's values, which hold the organization. Bounded by the bytes its records hold
 * (PAGE_CACHE_MB; the records' bytes are mostly those the record texts keep too), and an entry
 * lives at most `ttlMs`; 0 keeps nothing, and every page is read as before.
 */
export class RecordPages {
  readonly #cache?: LRUCache<string, KeptPage>
  /** Per list and organization: how the last lookups went, and until when lookups pause. */
  readonly #yields = new LRUCache<string, Yield>({ max: 10_000 })

  constructor(maxMb: number, ttlMs = 5 * 60_000) {
    if (maxMb > 0) {
      this.#cache = new LRUCache({
        maxSize: Math.floor(maxMb * 1024 * 1024),
        sizeCalculation: (page, key) => page.records.reduce((bytes, record) => bytes + record.length + 8, key.length + page.mark.length + 128),
        ttl: ttlMs
      })
    }
  }

  get enabled() {
    return this.#cache !== undefined
  }

  /**
   * The page kept under `key`, if it was read under this `mark`. A page kept under another mark
   * counts against its list's `scope` (looked); a page not kept at all (not asked yet, or
   * evicted) counts neither way, so that a list's pages are kept while they are first asked.
   */
  get(key: string, mark: string, scope?: string): KeptPage | undefined {
    const page = this.#cache?.get(key)
    if (page && scope !== undefined) this.looked(scope, page.mark === mark)
    return page && page.mark === mark ? page : undefined
  }

  /** Keeps a page read after its tables' `mark` was read. */
  set(key: string, mark: string, total: number, records: Buffer[]) {
    this.#cache?.set(key, { mark, total, records })
  }

  /**
   * Whether the pages of a list (`scope`: its tables' mark and the organization) are worth
   * looking up now: false while they pause after too few hits.
   */
  worthLooking(scope: string, now = Date.now()): boolean {
    if (!this.#cache) return false
    const yields = this.#yields.get(scope)
    return !yields || yields.pausedUntil <= now
  }

  /** Counts a lookup of a kept page of the list; after YIELD_WINDOW of them, pauses the list if too few hit. */
  looked(scope: string, hit: boolean, now = Date.now()) {
    let yields = this.#yields.get(scope)
    if (!yields) this.#yields.set(scope, (yields = { lookups: 0, hits: 0, pausedUntil: 0 }))
    yields.lookups++
    if (hit) yields.hits++
    if (yields.lookups < YIELD_WINDOW) return
    if (yields.hits < yields.lookups * MIN_HIT_RATE) yields.pausedUntil = now + PAUSE_MS
    yields.lookups = yields.hits = 0
  }

  /** Forgets every page (tests). */
  clear() {
    this.#cache?.clear()
    this.#yields.clear()
  }

  get size() {
    return this.#cache?.size ?? 0
  }
}

/** Lookups of a list's pages counted together before its hit rate is judged. */
export const YIELD_WINDOW = 64
/** Below this rate of hits a list's pages pause: a mark read costs about a quarter of what a hit saves. */
export const MIN_HIT_RATE = 0.25
/** How long a list's pages pause before they are tried again. */
export const PAUSE_MS = 2_000

interface Yield {
  lookups: number
  hits: number
  pausedUntil: number
}

/** A kept page: the mark it was read under, its total and its records' texts in order. */
export interface KeptPage {
  mark: string
  total: number
  records: Buffer[]
}

/** The kept pages of a database: one cache per knex instance, made with `maxMb` on first use (8 MB unless configured). */
export const recordPagesOf = perDatabase((maxMb) => new RecordPages(maxMb))
