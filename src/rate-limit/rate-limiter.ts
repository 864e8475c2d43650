import crypto from 'node:crypto'
import { TooManyRequests } from '@feathersjs/errors'
import { secondsUntilOneFrees } from './sliding-log.js'
import type { LogState, SlidingLogStore } from './sliding-log.js'

export interface RateLimitPolicy {
  points: number
  windowS: number
}

export interface RateLimitDecision {
  allowed: boolean
  limit: number
  /** Requests counted in the window, this one included when it was allowed. */
  current: number
  remaining: number
  windowS: number
  /** Whole seconds until the oldest counted request leaves the window (one more unit frees up). */
  resetS: number
}

/** Applies a policy (points per sliding window) to keys of a sliding-log store. */
export class RateLimiter {
  private readonly instance = crypto.randomBytes(6).toString('base64url')
  private sequence = 0

  constructor(readonly store: SlidingLogStore) {}

  /** A log member unique across instances, so two requests in the same millisecond both count. */
  newMember() {
    return `${this.instance}:${(this.sequence++).toString(36)}`
  }

  async consume(key: string, policy: RateLimitPolicy, member = this.newMember()): Promise<RateLimitDecision> {
    const windowMs = policy.windowS * 1000
    return this.decision(policy, await this.store.hit(key, policy.points, windowMs, member))
  }

  /** Counts `units` at once (the records of a batch) against a budget of policy.points units. */
  async consumeUnits(key: string, policy: RateLimitPolicy, units: number): Promise<RateLimitDecision> {
    const windowMs = policy.windowS * 1000
    return this.decision(policy, await this.store.hitWeighted(key, policy.points, windowMs, this.newMember(), units))
  }

  private decision(policy: RateLimitPolicy, state: LogState): RateLimitDecision {
    const windowMs = policy.windowS * 1000
    return {
      allowed: state.added,
      limit: policy.points,
      current: state.count,
      remaining: Math.max(0, policy.points - state.count),
      windowS: policy.windowS,
      resetS: secondsUntilOneFrees(state, windowMs)
    }
  }

  release(key: string, member: string) {
    return this.store.release(key, member)
  }

  releaseByPrefix(key: string, prefix: string) {
    return this.store.releaseByPrefix(key, prefix)
  }

  close() {
    return this.store.close()
  }
}

/** The spec's 429: data carries limit, current, window (seconds) and retryAfter (whole seconds). */
export const rateLimitExceeded = (decision: RateLimitDecision) =>
  new TooManyRequests('Rate limit exceeded', {
    limit: decision.limit,
    current: decision.current,
    window: decision.windowS,
    retryAfter: decision.resetS
  })

/**
 * Response headers of the IETF draft (draft-ietf-httpapi-ratelimit-headers, the widely
 * implemented RateLimit-Limit/-Remaining/-Reset fields plus RateLimit-Policy).
 */
export const rateLimitHeaders = (decision: RateLimitDecision): Record<string, string> => ({
  'RateLimit-Limit': String(decision.limit),
  'RateLimit-Remaining': String(decision.remaining),
  'RateLimit-Reset': String(decision.resetS),
  'RateLimit-Policy': `${decision.limit};w=${decision.windowS}`,
  ...(decision.allowed ? {} : { 'Retry-After': String(decision.resetS) })
})
