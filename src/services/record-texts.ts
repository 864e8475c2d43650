import type { Knex } from 'knex'
import { LRUCache } from 'lru-cache'
import { ownPartOf } from './wire-pages.js'

/**
 * The JSON texts of records that wire pages sent recently (wire-pages.ts), each kept with the
 * version of the rows it was written from, so that a page whose records have not changed is not
 * written again by Postgres: building a record's text (its members, its relations as JSON) was
 * most of what a page of 50 deals cost the database.
 *
 * A version is the rows' `xmin`: the transaction that wrote the version of the row a reader sees.
 * Every write of a row (an update, a soft delete, a restore) makes a new version with the writing
 * transaction's id, and a reader outside that transaction only ever sees versions whose
 * transaction has committed, so one row's xmin names one content. A record's version holds its
 * own row's, each related row's (a relation that is absent or deleted reads '-') and, where the
 * record stores custom-field values, the state of its organization's definitions (their ids and
 * xmins), which give those values their names. A page asks Postgres for the versions, takes the
 * texts whose version matches from here and reads only the others.
 *
 * Where the tables of a list's relations carry change marks (migration 20261126000200), a page
 * reads each record's own part of its version and the relations' mark instead of probing every
 * related row: a text whose own part matches and that was last seen under the same mark is
 * current, since no row of those tables has been written since (marked). One last seen under
 * another mark has its relations' versions read by key, and is current if they match (confirm).
 *
 * A text is kept as its UTF-8 bytes, outside the JavaScript heap, and copied as they are into the
 * page's buffer (WirePage.bytes).
 *
 * Transaction ids come round again after four billion transactions; an entry lives at most
 * `ttlMs` (five minutes), far less than any database takes to get through that many. (A database
 * restored into another cluster starts another count of transaction ids: restart the service
 * after such a restore, as after any change of database under it.) Bounded by
 * the bytes it holds (RECORD_CACHE_MB, LRU); 0 keeps nothing and every page reads its texts.
 */
export class RecordTexts {
  readonly #cache?: LRUCache<string, KeptText>

  constructor(maxMb: number, ttlMs = 5 * 60_000) {
    if (maxMb > 0) {
      this.#cache = new LRUCache({
        maxSize: Math.floor(maxMb * 1024 * 1024),
        sizeCalculation: (entry, key) => entry.text.length + entry.version.length + (entry.mark?.length ?? 0) + key.length + 64,
        ttl: ttlMs
      })
    }
  }

  /** The text kept under `key` (as UTF-8, ready for the response) if it was written from rows of this `version`. */
  get(key: string, version: string | null): Buffer | undefined {
    if (!this.#cache || version === null) return undefined
    const entry = this.#cache.get(key)
    return entry && entry.version === version ? entry.text : undefined
  }

  /**
   * The text kept under `key` if its record's own row is of version `own` (its own part,
   * wireVersion) and its relations' `mark` is the one its relations' versions were last seen
   * under; UNCONFIRMED where only the mark differs (a relation's table was written since: its
   * relations' versions decide, confirm); undefined where the text must be read again.
   */
  marked(key: string, own: string | null, mark: string | null): Buffer | typeof UNCONFIRMED | undefined {
    if (!this.#cache || own === null) return undefined
    const entry = this.#cache.get(key)
    if (!entry || !ownPartOf(entry.version, own)) return undefined
    return mark !== null && entry.mark === mark ? entry.text : UNCONFIRMED
  }

  /**
   * The text kept under `key` if it was written from rows of this whole `version`, read with the
   * relations' `mark` in one statement: the text is then known current under that mark.
   */
  confirm(key: string, version: string | null, mark: string | null): Buffer | undefined {
    const entry = version === null ? undefined : this.#cache?.get(key)
    if (!entry || entry.version !== version) return undefined
    entry.mark = mark
    return entry.text
  }

  /** Keeps `text`, written from rows of `version`, read with the relations' `mark` (null without one) in one statement. */
  set(key: string, version: string | null, text: Buffer, mark: string | null = null) {
    if (this.#cache && version !== null) this.#cache.set(key, { version, text, mark })
  }

  /** Forgets every text (tests). */
  clear() {
    this.#cache?.clear()
  }

  get size() {
    return this.#cache?.size ?? 0
  }
}

/** A kept text: the version of the rows it was written from, and the relations' mark under which that version was last read. */
interface KeptText {
  version: string
  text: Buffer
  mark: string | null
}

/** RecordTexts.marked: the record's own row is unchanged, its relations are to be checked. */
export const UNCONFIRMED = Symbol('unconfirmed')

/** One instance per knex instance, made with the first caller's `maxMb` (a cache of that database's pages). */
export function perDatabase<T>(make: (maxMb: number) => T): (db: Knex, maxMb?: number) => T {
  const byDatabase = new WeakMap<Knex, T>()
  return (db, maxMb = 8) => {
    let made = byDatabase.get(db)
    if (!made) byDatabase.set(db, (made = make(maxMb)))
    return made
  }
}

/** The record texts of a database's pages: one cache per knex instance, made with `maxMb` on first use (8 MB unless configured). */
export const recordTextsOf = perDatabase((maxMb) => new RecordTexts(maxMb))
