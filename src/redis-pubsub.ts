import { createRequire } from 'node:module'
import type { Redis, RedisOptions } from 'ioredis'

const require = createRequire(import.meta.url)

/** A Redis client; ioredis loads with the first one (only with REDIS_URL set, not with the application). */
export const createRedis = (url: string, options: RedisOptions): Redis =>
  new (require('ioredis') as typeof import('ioredis')).Redis(url, options)

const RECONNECT_MAX_MS = 2_000

/**
 * A publisher and a subscriber on Redis for messages between instances (key invalidation,
 * events). Neither may hold up start-up or a request: they connect lazily in the background,
 * a publish fails at once while Redis is away (no offline queue), errors are the caller's to
 * handle by falling back, and both keep reconnecting (ioredis subscribes again after each).
 */
export function pubSubConnections(url: string) {
  const options = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    retryStrategy: (times: number) => Math.min(times * 200, RECONNECT_MAX_MS)
  }
  const publisher = createRedis(url, options)
  const subscriber = createRedis(url, { ...options, enableOfflineQueue: true })
  for (const client of [publisher, subscriber]) client.on('error', () => undefined)
  return { publisher, subscriber }
}
