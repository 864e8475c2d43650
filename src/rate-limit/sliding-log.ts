/**
 * An exact sliding log: for every key, the instants of the requests counted in the last
 * `windowMs` milliseconds. A request at instant t counts during [t, t + windowMs), so within
 * any window-long span at most `limit` requests are ever admitted — there is no clock-window
 * boundary at which twice the limit could pass, and no approximation error.
 */
export interface SlidingLogStore {
  /**
   * Drops the entries that left the window, then records `member` at the current instant if
   * fewer than `limit` entries remain. One atomic step per call, whatever the number of callers.
   */
  hit(key: string, limit: number, windowMs: number, member: string): Promise<LogState>
  /**
   * The same for an entry that counts `weight` units (a batch of records): recorded if the units
   * in the window plus `weight` stay within `limit`. A key is used with hit or with hitWeighted, never both.
   */
  hitWeighted(key: string, limit: number, windowMs: number, member: string, weight: number): Promise<LogState>
  /** Takes back one recorded entry (a login attempt that turned out to be successful). */
  release(key: string, member: string): Promise<void>
  /** Takes back every entry whose member starts with `prefix` (the failed logins of one client address). */
  releaseByPrefix(key: string, prefix: string): Promise<void>
  close(): Promise<void>
}

export interface LogState {
  /** Whether this call's entry was recorded (false: the limit was already reached). */
  added: boolean
  /** Entries (units, for a weighted log) in the window after this call. */
  count: number
  /** The store's clock at this call, in epoch milliseconds. */
  now: number
  /**
   * Instant of the oldest entry still in the window (`now` when the log is empty); for a refused
   * weighted call, of the entry whose expiry makes room for it.
   */
  oldest: number
}

/** Whole seconds until the oldest entry leaves the window, i.e. until one more request fits. */
export const secondsUntilOneFrees = (state: LogState, windowMs: number) =>
  state.count === 0 ? 0 : Math.max(1, Math.ceil((state.oldest + windowMs - state.now) / 1000))
