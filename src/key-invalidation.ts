import crypto from 'node:crypto'
import { Redis } from 'ioredis'
import type { Application } from './declarations.js'

const RECONNECT_MAX_MS = 2_000

/**
 * Instances remember verified API keys for a few seconds. When one instance sees a change that
 * may revoke a key, it publishes it on Redis so that every instance forgets at once, instead of
 * honouring a deactivated key until its cache entry expires. Without REDIS_URL (one instance)
 * or while Redis is unreachable, the cache lifetime remains the bound.
 */
export class KeyInvalidation {
  private readonly instance = crypto.randomUUID()
  private publisher?: Redis
  private subscriber?: Redis

  constructor(private readonly app: Application) {}

  private get channel() {
    return `${this.app.get('rateLimitPrefix')}api-keys:forget`
  }

  /**
   * Subscribes in the background (a Redis that hangs must never hold up start-up; ioredis
   * subscribes again after every reconnect); `forget` runs whenever another instance announces
   * a change.
   */
  start(forget: () => void) {
    const url = this.app.get('redisUrl')
    if (!url) return
    const options = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1_000,
      retryStrategy: (times: number) => Math.min(times * 200, RECONNECT_MAX_MS)
    }
    this.publisher = new Redis(url, options)
    this.subscriber = new Redis(url, { ...options, enableOfflineQueue: true })
    for (const client of [this.publisher, this.subscriber]) client.on('error', () => undefined)
    this.subscriber.on('message', (_channel: string, from: string) => {
      if (from !== this.instance) forget()
    })
    this.publisher.connect().catch(() => undefined)
    this.subscriber.connect().then(() => this.subscriber!.subscribe(this.channel)).catch(() => undefined)
  }

  /** Tells the other instances; a Redis outage only delays them to the cache lifetime. */
  announce() {
    this.publisher?.publish(this.channel, this.instance).catch(() => undefined)
  }

  async stop() {
    this.publisher?.disconnect()
    this.subscriber?.disconnect()
  }
}
