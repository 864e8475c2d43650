import { describe, it, expect, afterAll } from 'vitest'
import { MemorySlidingLog } from '../../src/rate-limit/memory-store.js'
import { RateLimiter } from '../../src/rate-limit/rate-limiter.js'
import { RedisSlidingLog, connectRedis } from '../../src/rate-limit/redis-store.js'
import { SHARED_REDIS_URL, uniquePrefix } from './redis-server.js'

/**
 * The batch record budget: a sliding log whose entries weigh their records. Through the limiter
 * itself (the HTTP side, one batch = one request and its records against BATCH_RECORDS_PER_HOUR,
 * is in test/services/batch-writes.test.ts).
 */
const WINDOW_S = 4
const policy = { points: 10, windowS: WINDOW_S }
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const redis = new RedisSlidingLog(connectRedis(SHARED_REDIS_URL, 2_000), uniquePrefix())
afterAll(async () => { await redis.close() })

describe.each([
  ['in memory', () => new MemorySlidingLog()],
  ['on Redis', () => redis]
] as const)('weighted sliding log, %s, 10 units per 4 s', (_store, makeStore) => {
  it('when batches fill the budget, then a batch that does not fit is refused whole and learns when enough units free up for it; units come back as batches slide out', async () => {
    const store = makeStore()
    if (store instanceof RedisSlidingLog) await store.client.connect().catch(() => undefined)
    const limiter = new RateLimiter(store)
    const key = `batch-records:org:${Math.random()}`
    const first = await limiter.consumeUnits(key, policy, 4)
    expect(first).toMatchObject({ allowed: true, current: 4, remaining: 6 })
    await sleep(1_500)
    const second = await limiter.consumeUnits(key, policy, 5)
    expect(second).toMatchObject({ allowed: true, current: 9, remaining: 1 })

    // 3 units fit once the first batch leaves the window; 7 only once the second one has left too.
    const three = await limiter.consumeUnits(key, policy, 3)
    const seven = await limiter.consumeUnits(key, policy, 7)
    expect(three).toMatchObject({ allowed: false, current: 9 })
    expect(seven).toMatchObject({ allowed: false, current: 9 })
    expect(three.resetS).toBeLessThanOrEqual(3)
    expect(seven.resetS).toBeGreaterThan(three.resetS)
    expect(seven.resetS).toBeLessThanOrEqual(WINDOW_S)
    // More than the budget never fits; one unit still does.
    expect((await limiter.consumeUnits(key, policy, 11)).allowed).toBe(false)
    expect(await limiter.consumeUnits(key, policy, 1)).toMatchObject({ allowed: true, current: 10 })

    await sleep(three.resetS * 1000 + 100)
    expect(await limiter.consumeUnits(key, policy, 3)).toMatchObject({ allowed: true, current: 9 })
  })
})
