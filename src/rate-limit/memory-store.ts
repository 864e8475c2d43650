import type { LogState, SlidingLogStore } from './sliding-log.js'

interface Log {
  times: number[]
  members: string[]
  weights: number[]
  /** Units of the live entries (their number, for an unweighted log). */
  total: number
  /** Index of the oldest live entry: expiry advances it instead of shifting the arrays. */
  head: number
  windowMs: number
}

const SWEEP_INTERVAL_MS = 60_000

/** The sliding log in this process's memory: exact for one instance, shared with none. */
export class MemorySlidingLog implements SlidingLogStore {
  private logs = new Map<string, Log>()
  private lastSweep = Date.now()

  constructor(private clock: () => number = Date.now) {}

  async hit(key: string, limit: number, windowMs: number, member: string): Promise<LogState> {
    return this.hitWeighted(key, limit, windowMs, member, 1)
  }

  async hitWeighted(key: string, limit: number, windowMs: number, member: string, weight: number): Promise<LogState> {
    const now = this.clock()
    this.sweepIdleLogs(now)
    let log = this.logs.get(key)
    if (!log) {
      log = { times: [], members: [], weights: [], total: 0, head: 0, windowMs }
      this.logs.set(key, log)
    }
    log.windowMs = windowMs
    expire(log, now)
    const added = log.total + weight <= limit
    if (added) {
      log.times.push(now)
      log.members.push(member)
      log.weights.push(weight)
      log.total += weight
    }
    const count = log.total
    return { added, count, now, oldest: count === 0 ? now : log.times[added ? log.head : roomMadeAt(log, weight, limit)] }
  }

  async release(key: string, member: string) {
    const log = this.logs.get(key)
    const index = log ? log.members.lastIndexOf(member) : -1
    if (log && index >= log.head) removeEntry(log, index)
  }

  async releaseByPrefix(key: string, prefix: string) {
    const log = this.logs.get(key)
    if (!log) return
    for (let index = log.members.length - 1; index >= log.head; index--) {
      if (log.members[index].startsWith(prefix)) removeEntry(log, index)
    }
  }

  async close() {
    this.logs.clear()
  }

  /** Keys nobody used for a whole window would otherwise stay in memory forever. */
  private sweepIdleLogs(now: number) {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return
    this.lastSweep = now
    for (const [key, log] of this.logs) {
      const newest = log.times[log.times.length - 1]
      if (newest === undefined || newest <= now - log.windowMs) this.logs.delete(key)
    }
  }
}

function removeEntry(log: Log, index: number) {
  log.total -= log.weights[index]
  log.times.splice(index, 1)
  log.members.splice(index, 1)
  log.weights.splice(index, 1)
}

function expire(log: Log, now: number) {
  const cutoff = now - log.windowMs
  while (log.head < log.times.length && log.times[log.head] <= cutoff) log.total -= log.weights[log.head++]
  // Compact once the expired prefix dominates, so memory stays proportional to the limit.
  if (log.head > 32 && log.head * 2 > log.times.length) {
    log.times = log.times.slice(log.head)
    log.members = log.members.slice(log.head)
    log.weights = log.weights.slice(log.head)
    log.head = 0
  }
}

/** Index of the entry whose expiry makes room for `weight` more units (the newest when nothing can). */
function roomMadeAt(log: Log, weight: number, limit: number) {
  let freed = 0
  for (let index = log.head; index < log.times.length; index++) {
    freed += log.weights[index]
    if (log.total - freed + weight <= limit) return index
  }
  return log.times.length - 1
}
