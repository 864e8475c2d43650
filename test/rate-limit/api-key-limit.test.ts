import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import type { Response } from 'supertest'
import { Redis } from 'ioredis'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import { SHARED_REDIS_URL, uniquePrefix } from './redis-server.js'

// Every behaviour holds for both stores: this process's memory, and Redis shared by instances.
const stores: [string, () => Partial<Configuration>][] = [
  ['in memory', () => ({ redisUrl: '' })],
  ['on Redis', () => ({ redisUrl: SHARED_REDIS_URL, rateLimitPrefix: uniquePrefix() })]
]

/** n GET calls of one path, `parallel` at a time, cycling through the given header sets. */
async function getMany(t: TestApp, path: string, keys: Record<string, string>[], n: number, parallel = 20) {
  const responses: Response[] = []
  for (let done = 0; done < n; done += parallel) {
    const batch = Array.from({ length: Math.min(parallel, n - done) }, (_, i) =>
      t.http().get(path).set(keys[(done + i) % keys.length]))
    responses.push(...(await Promise.all(batch)))
  }
  return responses
}

async function secondKey(t: TestApp, tenant: Tenant) {
  const created = await t.http().post('/api-keys').set(tenant.bearer).send({ organization_id: tenant.organization.id, name: 'second key' })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  return { 'x-api-key': created.body.key as string }
}

describe.each(stores)('API-key rate limit at the real default (1,000 per 3,600 s), %s', (_store, storeConfig) => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let companyPath: string
  let config: Partial<Configuration>

  beforeAll(async () => {
    config = storeConfig()
    t = await startApp({ ...config, rateLimitPoints: 1000, rateLimitWindowS: 3600 })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    const company = await t.http().post('/companies').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'Initech' })
    expect(company.status, JSON.stringify(company.body)).toBe(201)
    companyPath = `/companies/${company.body.id}`
  })
  afterAll(async () => { await t.close() })

  it('when one organization\'s keys make 1,000 requests, then all are served and the 1,001st gets the spec\'s 429', async () => {
    const keys = [acme.key, await secondKey(t, acme)]
    const started = Date.now()
    const served = await getMany(t, companyPath, keys, 1000)
    // The first request leaves the window 3,600 s after it was counted, whatever the machine's speed.
    const earliestReset = 3600 - Math.ceil((Date.now() - started) / 1000) - 1

    expect(served.map((r) => r.status).filter((s) => s !== 200)).toEqual([])
    for (const response of served) {
      expect(response.headers['ratelimit-limit']).toBe('1000')
      expect(response.headers['ratelimit-policy']).toBe('1000;w=3600')
      expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(earliestReset)
      expect(Number(response.headers['ratelimit-reset'])).toBeLessThanOrEqual(3600)
    }
    const remaining = served.map((r) => Number(r.headers['ratelimit-remaining'])).sort((a, b) => a - b)
    expect(remaining).toEqual(Array.from({ length: 1000 }, (_, i) => i))

    // The 1,001st is a write: it must be refused before the service, so nothing is created.
    const refused = await t.http().post('/companies').set(keys[1]).send({ name: 'Over the limit' })
    expect(refused.status).toBe(429)
    const retryAfter = refused.body.data?.retryAfter
    expect(refused.body).toEqual({
      name: 'TooManyRequests',
      message: 'Rate limit exceeded',
      code: 429,
      className: 'too-many-requests',
      data: { limit: 1000, current: 1000, window: 3600, retryAfter }
    })
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(earliestReset)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect(refused.headers['retry-after']).toBe(String(retryAfter))
    expect(refused.headers['ratelimit-limit']).toBe('1000')
    expect(refused.headers['ratelimit-remaining']).toBe('0')
    expect(refused.headers['ratelimit-reset']).toBe(String(retryAfter))
    expect(refused.headers['ratelimit-policy']).toBe('1000;w=3600')

    const list = await t.http().get('/companies').set(acme.bearer).query({ organization_id: acme.organization.id })
    expect(list.status, JSON.stringify(list.body)).toBe(200)
    expect(list.body.data.map((c: any) => c.name)).toEqual(['Initech'])

    const again = await t.http().get(companyPath).set(keys[0])
    expect(again.status).toBe(429)
    expect(again.body.data.current).toBe(1000)

    if (config.redisUrl) {
      // The log really lives in Redis (not in a silent in-memory fallback): 1,000 entries, refusals not logged.
      const redis = new Redis(config.redisUrl)
      try {
        expect(await redis.zcard(`${config.rateLimitPrefix}org:${acme.organization.id}`)).toBe(1000)
      } finally {
        redis.disconnect()
      }
    }
  }, 120_000)

  it('when one organization is over its limit, then another organization\'s key is still served with its own budget', async () => {
    const other = await t.http().get('/companies').set(globex.key)
    expect(other.status, JSON.stringify(other.body)).toBe(200)
    expect(other.headers['ratelimit-limit']).toBe('1000')
    expect(other.headers['ratelimit-remaining']).toBe('999')
  })

  it('when the organization is over its limit, then its members\' bearer-JWT requests are served and carry no RateLimit headers', async () => {
    const blocked = await t.http().get(companyPath).set(acme.key)
    expect(blocked.status).toBe(429)
    const jwt = await t.http().get(companyPath).set(acme.bearer)
    expect(jwt.status, JSON.stringify(jwt.body)).toBe(200)
    expect(jwt.body.name).toBe('Initech')
    expect(jwt.headers['ratelimit-limit']).toBeUndefined()
    expect(jwt.headers['ratelimit-remaining']).toBeUndefined()
  })
})

describe.each(stores)('API-key rate limit headers and counting, %s', (_store, storeConfig) => {
  let t: TestApp
  let tenant: Tenant

  beforeAll(async () => {
    t = await startApp({ ...storeConfig(), rateLimitPoints: 5, rateLimitWindowS: 60 })
    tenant = await createTenant(t)
  })
  afterAll(async () => { await t.close() })

  it('when an API-key request fails (404, 400), then it still counts and carries the RateLimit headers', async () => {
    const missing = await t.http().get('/companies/987654').set(tenant.key)
    expect(missing.status).toBe(404)
    expect(missing.headers['ratelimit-limit']).toBe('5')
    expect(missing.headers['ratelimit-remaining']).toBe('4')
    expect(missing.headers['ratelimit-policy']).toBe('5;w=60')
    expect(missing.headers['retry-after']).toBeUndefined()

    const invalid = await t.http().post('/companies').set(tenant.key).send({ name: 'x', unknown_field: 1 })
    expect(invalid.status).toBe(400)
    expect(invalid.headers['ratelimit-remaining']).toBe('3')

    const created = await t.http().post('/companies').set(tenant.key).send({ name: 'Counted' })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.headers['ratelimit-remaining']).toBe('2')
    expect(Number(created.headers['ratelimit-reset'])).toBeGreaterThan(55)
    expect(Number(created.headers['ratelimit-reset'])).toBeLessThanOrEqual(60)
  })

  it('when a request carries an unknown API key, then it gets 401 and no organization\'s budget is touched', async () => {
    const unknown = await t.http().get('/companies').set({ 'x-api-key': 'crm_nothere_0000' })
    expect(unknown.status).toBe(401)
    expect(unknown.headers['ratelimit-limit']).toBeUndefined()
    const next = await t.http().get('/companies').set(tenant.key)
    expect(next.status).toBe(200)
    expect(next.headers['ratelimit-remaining']).toBe('1')
  })

  it('when a service calls another on behalf of an authenticated API-key request, then that call is not counted again', async () => {
    const fresh = await createTenant(t, 'Nested')
    const first = await t.http().get('/companies').set(fresh.key)
    expect(first.headers['ratelimit-remaining']).toBe('4')
    const org = fresh.organization.id
    // What a service does for its caller (e.g. an assistant's tool call): params of the authenticated request.
    const onBehalf = {
      provider: 'rest', authenticated: true, user: fresh.user,
      caller: { userId: fresh.user.id, apiKeyOrganizationId: org, roles: new Map([[org, 'owner' as const]]) }
    }
    const page: any = await t.app.service('companies').find({ ...onBehalf, query: { organization_id: org } as any })
    expect(page.total).toBe(0)
    const second = await t.http().get('/companies').set(fresh.key)
    expect(second.headers['ratelimit-remaining']).toBe('3')
  })

  it('when the budget is spent by concurrent requests, then exactly the limit is served and the rest are refused', async () => {
    const fresh = await createTenant(t, 'Concurrent')
    const responses = await getMany(t, '/companies', [fresh.key], 20, 20)
    const statuses = responses.map((r) => r.status).sort()
    expect(statuses).toEqual([...Array(5).fill(200), ...Array(15).fill(429)])
  })
})

describe('rate limiting switched off (RATE_LIMIT_ENABLED=false)', () => {
  let t: TestApp
  beforeAll(async () => { t = await startApp({ rateLimitEnabled: false, rateLimitPoints: 1 }) })
  afterAll(async () => { await t.close() })

  it('when the limiter is disabled, then API-key requests are never refused and carry no RateLimit headers', async () => {
    const tenant = await createTenant(t)
    const responses = await getMany(t, '/companies', [tenant.key], 5)
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(responses[4].headers['ratelimit-limit']).toBeUndefined()
  })
})
