import type { Logger } from 'pino'
import type { MemorySlidingLog } from './memory-store.js'
import type { RedisSlidingLog } from './redis-store.js'
import type { LogState, SlidingLogStore } from './sliding-log.js'

const ERROR_LOG_INTERVAL_MS = 30_000

/**
 * Redis while it answers; this instance's memory while it does not. Requests are always
 * served: an outage only turns the shared budget into a per-instance one. The client keeps
 * reconnecting in the background, and the first call after it is ready goes to Redis again.
 */
export class FallbackSlidingLog implements SlidingLogStore {
  private lastErrorLog = 0
  private failing = false

  constructor(private redis: RedisSlidingLog, private memory: MemorySlidingLog, private logger?: Logger) {
    // ioredis reports connection errors as events; without a listener they would crash the process.
    redis.client.on('error', (error) => this.reportFailure(error))
  }

  async hit(key: string, limit: number, windowMs: number, member: string): Promise<LogState> {
    return this.either((store) => store.hit(key, limit, windowMs, member))
  }

  async hitWeighted(key: string, limit: number, windowMs: number, member: string, weight: number): Promise<LogState> {
    return this.either((store) => store.hitWeighted(key, limit, windowMs, member, weight))
  }

  /** Redis when it answers, else this instance's memory. */
  private async either(hit: (store: SlidingLogStore) => Promise<LogState>): Promise<LogState> {
    if (this.redis.ready) {
      try {
        const state = await hit(this.redis)
        this.reportRecovery()
        return state
      } catch (error) {
        this.reportFailure(error)
      }
    } else {
      this.reportFailure(new Error(`Redis connection is ${this.redis.client.status}`))
    }
    return hit(this.memory)
  }

  async release(key: string, member: string) {
    await Promise.allSettled([this.redis.ready ? this.redis.release(key, member) : undefined, this.memory.release(key, member)])
  }

  async releaseByPrefix(key: string, prefix: string) {
    await Promise.allSettled([this.redis.ready ? this.redis.releaseByPrefix(key, prefix) : undefined, this.memory.releaseByPrefix(key, prefix)])
  }

  async close() {
    await Promise.all([this.redis.close(), this.memory.close()])
  }

  private reportRecovery() {
    if (!this.failing) return
    this.failing = false
    this.logger?.info('rate limiter: Redis answers again, limits are shared across instances again')
  }

  /** One error line per interval: an outage must not flood the log with a line per request. */
  private reportFailure(error: unknown) {
    this.failing = true
    const now = Date.now()
    if (now - this.lastErrorLog < ERROR_LOG_INTERVAL_MS) return
    this.lastErrorLog = now
    this.logger?.error({ err: error }, 'rate limiter: Redis unavailable, limiting per instance in memory')
  }
}
