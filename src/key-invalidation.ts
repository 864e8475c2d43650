import crypto from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Application } from './declarations.js'
import { pubSubConnections } from './redis-pubsub.js'

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
    const { publisher, subscriber } = pubSubConnections(url)
    this.publisher = publisher
    this.subscriber = subscriber
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
