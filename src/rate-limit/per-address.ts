import type { Context, Next } from 'koa'
import type { Application } from '../declarations.js'
import { MemorySlidingLog } from './memory-store.js'
import { RateLimiter, rateLimitExceeded, rateLimitHeaders } from './rate-limiter.js'
import type { RateLimitPolicy } from './rate-limiter.js'

/**
 * Koa middleware in front of every public route (booking pages, the web-chat widget): a
 * sliding-log limit per client address. It uses the application's limiter when one is
 * configured (Redis-backed across instances), else its own in-memory one.
 */
export const limitPerAddress = (app: Application) => {
  const ownLimiter = new RateLimiter(new MemorySlidingLog())
  return async (ctx: Context, next: Next) => {
    const policy: RateLimitPolicy = { points: app.get('publicRateLimitPoints'), windowS: app.get('publicRateLimitWindowS') }
    const limiter = app.get('rateLimiter') ?? ownLimiter
    const decision = await limiter.consume(`public:${ctx.ip}`, policy)
    ctx.set(rateLimitHeaders(decision))
    if (!decision.allowed) throw rateLimitExceeded(decision)
    return next()
  }
}
