import type { Application, NextFunction } from '../declarations.js'
import { FallbackSlidingLog } from './fallback-store.js'
import { MemorySlidingLog } from './memory-store.js'
import { RateLimiter } from './rate-limiter.js'
import { connectRedis, RedisSlidingLog } from './redis-store.js'

export * from './rate-limiter.js'

declare module '../declarations.js' {
  interface Configuration {
    /** Absent when RATE_LIMIT_ENABLED is false. */
    rateLimiter?: RateLimiter
  }
}

/** How long start-up waits for Redis before serving with the in-memory fallback. */
const STARTUP_CONNECT_WAIT_MS = 2_000

/**
 * Creates the application's limiter: Redis-backed with an in-memory fallback when REDIS_URL is
 * set, in-memory otherwise. Connects on setup and disconnects on teardown.
 */
export const rateLimiting = (app: Application) => {
  if (!app.get('rateLimitEnabled')) return
  const redisUrl = app.get('redisUrl')
  if (!redisUrl) {
    app.set('rateLimiter', new RateLimiter(new MemorySlidingLog()))
    return
  }
  const redis = new RedisSlidingLog(connectRedis(redisUrl), app.get('rateLimitPrefix'))
  const limiter = new RateLimiter(new FallbackSlidingLog(redis, new MemorySlidingLog(), app.get('logger')))
  app.set('rateLimiter', limiter)
  app.hooks({
    setup: [
      async (_context: unknown, next: NextFunction) => {
        await connectWithin(redis, STARTUP_CONNECT_WAIT_MS)
        await next()
      }
    ],
    teardown: [
      async (_context: unknown, next: NextFunction) => {
        await next()
        await limiter.close()
      }
    ]
  })
}

/** An unreachable Redis must not stop the API from starting: the fallback serves meanwhile. */
async function connectWithin(redis: RedisSlidingLog, ms: number) {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => { timer = setTimeout(resolve, ms) })
  await Promise.race([redis.client.connect().catch(() => undefined), timeout])
  clearTimeout(timer)
}
