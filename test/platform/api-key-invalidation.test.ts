import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'

// Two instances need one shared database and one Redis: a Postgres server and REDIS_URL.
const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL)

describe.skipIf(!shared)('API keys across instances', () => {
  let a: TestApp
  let b: TestApp
  beforeAll(async () => {
    const prefix = `crm-test:${crypto.randomUUID()}:`
    a = await startApp({ redisUrl: process.env.REDIS_URL, rateLimitPrefix: prefix })
    b = await startApp({ redisUrl: process.env.REDIS_URL, rateLimitPrefix: prefix })
  })
  afterAll(async () => {
    await Promise.all([a.close(), b.close()])
  })

  it('when a key is deactivated on one instance, then another instance that had verified it refuses it at once, not after its cache lifetime', async () => {
    const tenant = await createTenant(a)
    expect((await b.http().get('/companies').set(tenant.key)).status).toBe(200)
    const keys = await a.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    await a.http().patch(`/api-keys/${keys.body.data[0].id}`).set(tenant.bearer).send({ active: false }).expect(200)

    const started = Date.now()
    let status = 200
    while (status === 200 && Date.now() - started < 1_000) {
      status = (await b.http().get('/companies').set(tenant.key)).status
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // The verified-key cache lives 5 s; the Redis announcement must beat it by far.
    expect(status).toBe(401)
    expect(Date.now() - started).toBeLessThan(1_000)
  })
})
