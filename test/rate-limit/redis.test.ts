import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest'
import net from 'node:net'
import { Redis } from 'ioredis'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { OwnRedisServer, quietPort, SHARED_REDIS_URL, uniquePrefix } from './redis-server.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Entries of an organization's log as Redis holds them. */
async function loggedInRedis(url: string, prefix: string, tenant: Tenant) {
  const redis = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null })
  redis.on('error', () => undefined)
  try {
    return await redis.zcard(`${prefix}org:${tenant.organization.id}`)
  } finally {
    redis.disconnect()
  }
}

// Two instances must share one database too; on embedded in-memory Postgres each has its own.
describe.skipIf(!process.env.DATABASE_URL)('two app instances on one Redis', () => {
  const prefix = uniquePrefix()
  let one: TestApp
  let two: TestApp

  beforeAll(async () => {
    const config = { redisUrl: SHARED_REDIS_URL, rateLimitPrefix: prefix, rateLimitPoints: 10, rateLimitWindowS: 600 }
    one = await startApp(config)
    two = await startApp(config)
  })
  afterAll(async () => { await Promise.all([one?.close(), two?.close()]) })

  it('when requests alternate between the instances, then they share one budget exactly and then both refuse', async () => {
    const tenant = await createTenant(one)
    const remaining: string[] = []
    for (let i = 0; i < 10; i++) {
      const instance = i % 2 === 0 ? one : two
      const response = await instance.http().get('/companies').set(tenant.key)
      expect(response.status, JSON.stringify(response.body)).toBe(200)
      remaining.push(response.headers['ratelimit-remaining'])
    }
    expect(remaining).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0'])

    for (const instance of [one, two]) {
      const refused = await instance.http().get('/companies').set(tenant.key)
      expect(refused.status).toBe(429)
      expect(refused.body.data).toMatchObject({ limit: 10, current: 10, window: 600 })
    }
    expect(await loggedInRedis(SHARED_REDIS_URL, prefix, tenant)).toBe(10)
  })

  it('when both instances receive a concurrent burst, then exactly the limit is served across them', async () => {
    const tenant = await createTenant(two)
    const burst = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one : two).http().get('/companies').set(tenant.key))
    const statuses = (await Promise.all(burst)).map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(30)
  })
})

describe('Redis unreachable', () => {
  it('when Redis is down from start-up, then requests are served with a per-instance limit, and Redis is used once it comes up', async () => {
    const server = new OwnRedisServer(await quietPort())
    const prefix = uniquePrefix()
    const t = await startApp({ redisUrl: server.url, rateLimitPrefix: prefix, rateLimitPoints: 3, rateLimitWindowS: 600 })
    try {
      const tenant = await createTenant(t)

      const before = Date.now()
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await t.http().get('/companies').set(tenant.key)).status)
      expect(statuses).toEqual([200, 200, 200, 429])
      expect(Date.now() - before).toBeLessThan(4_000)

      await server.start()
      // The client reconnects in the background (at most 2 s between attempts); the next
      // calls go to Redis, whose fresh log starts empty.
      let inRedis = 0
      for (let i = 0; i < 30 && inRedis === 0; i++) {
        await sleep(200)
        const response = await t.http().get('/companies').set(tenant.key)
        inRedis = await loggedInRedis(server.url, prefix, tenant)
        if (inRedis > 0) expect(response.status).toBe(200)
      }
      expect(inRedis).toBe(1)
      const next = await t.http().get('/companies').set(tenant.key)
      expect(next.headers['ratelimit-remaining']).toBe('1')
      expect(await loggedInRedis(server.url, prefix, tenant)).toBe(2)
    } finally {
      await t.close()
      await server.stop()
    }
  }, 30_000)

  it('when the Redis address accepts connections but never answers, then requests do not hang', async () => {
    const silent = net.createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as net.AddressInfo
    const t = await startApp({ redisUrl: `redis://127.0.0.1:${port}`, rateLimitPrefix: uniquePrefix(), rateLimitPoints: 2, rateLimitWindowS: 600 })
    try {
      const tenant = await createTenant(t)
      const before = Date.now()
      const statuses = []
      for (let i = 0; i < 3; i++) statuses.push((await t.http().get('/companies').set(tenant.key)).status)
      expect(statuses).toEqual([200, 200, 429])
      expect(Date.now() - before).toBeLessThan(3_000)
    } finally {
      await t.close()
      silent.close()
    }
  }, 30_000)

  it('when Redis stops while the API runs, then requests are still served, one error is logged, and when Redis returns it is used again', async () => {
    const server = await OwnRedisServer.start()
    const prefix = uniquePrefix()
    const t = await startApp({ redisUrl: server.url, rateLimitPrefix: prefix, rateLimitPoints: 100, rateLimitWindowS: 600 })
    try {
      const tenant = await createTenant(t)
      for (let i = 0; i < 2; i++) expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
      expect(await loggedInRedis(server.url, prefix, tenant)).toBe(2)

      const errors = vi.spyOn(t.app.get('logger'), 'error')
      await server.stop()
      const during = Date.now()
      for (let i = 0; i < 5; i++) {
        const response = await t.http().get('/companies').set(tenant.key)
        expect(response.status, JSON.stringify(response.body)).toBe(200)
        expect(response.headers['ratelimit-limit']).toBe('100')
      }
      expect(Date.now() - during).toBeLessThan(5_000)
      // The outage is reported, but not once per request.
      const limiterErrors = errors.mock.calls.filter(([, message]) => String(message).startsWith('rate limiter'))
      expect(limiterErrors).toHaveLength(1)

      await server.start()
      let inRedis = 0
      for (let i = 0; i < 30 && inRedis === 0; i++) {
        await sleep(200)
        expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
        inRedis = await loggedInRedis(server.url, prefix, tenant)
      }
      // The restarted server kept nothing (--save ''): its log holds only calls made since.
      expect(inRedis).toBe(1)
      expect((await t.http().get('/companies').set(tenant.key)).headers['ratelimit-remaining']).toBe('98')
      expect(await loggedInRedis(server.url, prefix, tenant)).toBe(2)
    } finally {
      await t.close()
      await server.stop()
    }
  }, 30_000)
})
