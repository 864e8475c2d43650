import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import { SHARED_REDIS_URL, uniquePrefix } from './redis-server.js'

const WINDOW_S = 4
const WINDOW_MS = WINDOW_S * 1000
const POINTS = 4

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const sleepUntil = (instant: number) => sleep(Math.max(0, instant - Date.now()))

const stores: [string, () => Partial<Configuration>][] = [
  ['in memory', () => ({ redisUrl: '' })],
  ['on Redis', () => ({ redisUrl: SHARED_REDIS_URL, rateLimitPrefix: uniquePrefix() })]
]

describe.each(stores)('sliding window, %s, 4 requests per 4 s', (_store, storeConfig) => {
  let t: TestApp
  let tenant: Tenant

  beforeAll(async () => {
    t = await startApp({ ...storeConfig(), rateLimitPoints: POINTS, rateLimitWindowS: WINDOW_S })
    tenant = await createTenant(t)
  })
  afterAll(async () => { await t.close() })

  /** n sequential API-key requests; their statuses, and when the first was sent and the last answered. */
  async function send(n: number) {
    const sentAt = Date.now()
    const responses = []
    for (let i = 0; i < n; i++) responses.push(await t.http().get('/companies').set(tenant.key))
    return { sentAt, doneAt: Date.now(), statuses: responses.map((r) => r.status), last: responses[responses.length - 1] }
  }

  it('when requests straddle a clock-window boundary, then no more than the limit is served in any window-long span, and capacity returns as old requests slide out', async () => {
    // A fixed window aligned to the clock would reset at `boundary` and serve phase 2 in full.
    const boundary = Math.ceil((Date.now() + 2000) / WINDOW_MS) * WINDOW_MS
    await sleepUntil(boundary - 1000)

    const phase1 = await send(2)
    expect(phase1.statuses).toEqual([200, 200])
    expect(phase1.last.headers['ratelimit-remaining']).toBe('2')

    await sleepUntil(boundary + 200)
    const phase2 = await send(4)
    expect(phase2.statuses).toEqual([200, 200, 429, 429])
    const refused = phase2.last
    expect(refused.body).toMatchObject({ name: 'TooManyRequests', code: 429, data: { limit: POINTS, current: POINTS, window: WINDOW_S } })
    // Phase 1's first request frees a unit 4 s after it was counted: about 2.8 s from now.
    const expectedWait = (phase1.sentAt + WINDOW_MS - phase2.doneAt) / 1000
    expect(refused.body.data.retryAfter).toBeGreaterThanOrEqual(Math.floor(expectedWait))
    expect(refused.body.data.retryAfter).toBeLessThanOrEqual(Math.ceil(expectedWait) + 1)
    expect(refused.headers['retry-after']).toBe(String(refused.body.data.retryAfter))

    // Phase 1 has left the window, phase 2's two served requests have not: exactly two fit.
    await sleepUntil(phase1.doneAt + WINDOW_MS + 250)
    expect(Date.now()).toBeLessThan(phase2.sentAt + WINDOW_MS)
    const phase3 = await send(3)
    expect(phase3.statuses).toEqual([200, 200, 429])

    // Phase 2 has left too: the two of phase 3 remain, so two more fit.
    await sleepUntil(phase2.doneAt + WINDOW_MS + 250)
    expect(Date.now()).toBeLessThan(phase3.sentAt + WINDOW_MS)
    const phase4 = await send(3)
    expect(phase4.statuses).toEqual([200, 200, 429])
  }, 20_000)
})
