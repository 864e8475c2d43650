import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { signUp, uniqueEmail } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import { SHARED_REDIS_URL, uniquePrefix } from './redis-server.js'

/** A login; `from` is the client address, forwarded through the trusted proxy (else the socket's). */
const login = (t: TestApp, email: string, password: string, from?: string) => {
  const request = t.http().post('/authentication')
  return (from ? request.set('X-Forwarded-For', from) : request).send({ strategy: 'local', email, password })
}

const stores: [string, () => Partial<Configuration>][] = [
  ['in memory', () => ({ redisUrl: '' })],
  ['on Redis', () => ({ redisUrl: SHARED_REDIS_URL, rateLimitPrefix: uniquePrefix() })]
]

describe.each(stores)('failed logins, %s: 10 per e-mail per 15 minutes', (_store, storeConfig) => {
  let t: TestApp

  beforeAll(async () => {
    // The per-address budget is raised here so that the e-mail's own limit is what is tested; the
    // trusted proxy lets a test speak from several client addresses.
    t = await startApp({ ...storeConfig(), loginRateLimitPoints: 10, loginRateLimitIpPoints: 100, loginRateLimitWindowS: 900, trustProxy: true })
  })
  afterAll(async () => { await t.close() })

  it('when an e-mail has 10 failed logins, then the 11th attempt from the same client address gets 429 even with the right password, and other accounts can still log in', async () => {
    const victim = await signUp(t)
    const email = victim.user.email
    for (let i = 0; i < 10; i++) {
      const failed = await login(t, email, 'wrong password')
      expect(failed.status, JSON.stringify(failed.body)).toBe(401)
    }

    const refused = await login(t, email, victim.password)
    expect(refused.status).toBe(429)
    const retryAfter = refused.body.data?.retryAfter
    expect(refused.body).toEqual({
      name: 'TooManyRequests',
      message: 'Rate limit exceeded',
      code: 429,
      className: 'too-many-requests',
      data: { limit: 10, current: 10, window: 900, retryAfter }
    })
    expect(retryAfter).toBeGreaterThan(890)
    expect(retryAfter).toBeLessThanOrEqual(900)
    expect(refused.headers['retry-after']).toBe(String(retryAfter))
    expect(refused.body.accessToken).toBeUndefined()

    // Case and spaces do not make a new budget for the same address.
    const variant = await login(t, ` ${email.toUpperCase()} `, 'wrong password')
    expect(variant.status).toBe(429)

    const bystander = await signUp(t)
    const ok = await login(t, bystander.user.email, bystander.password)
    expect(ok.status, JSON.stringify(ok.body)).toBe(201)
    expect(ok.body.accessToken).toEqual(expect.any(String))
  })

  it('when another client address spends an e-mail\'s budget, then the holder signs in from a clean address; a wrong password from a clean address is 429 and limits that address too; the guessing address stays refused', async () => {
    const victim = await signUp(t)
    const email = victim.user.email
    const attacker = '203.0.113.66'
    for (let i = 0; i < 10; i++) expect((await login(t, email, 'wrong password', attacker)).status).toBe(401)
    expect((await login(t, email, 'wrong password', attacker)).status).toBe(429)

    for (let i = 0; i < 2; i++) {
      const holder = await login(t, email, victim.password, '198.51.100.7')
      expect(holder.status, JSON.stringify(holder.body)).toBe(201)
      expect(holder.body.accessToken).toEqual(expect.any(String))
    }

    // Over the budget, a clean address gets one check: its failure is a 429 and marks it.
    const typo = await login(t, email, 'wrong password', '198.51.100.8')
    expect(typo.status).toBe(429)
    expect(typo.body).toMatchObject({ name: 'TooManyRequests', data: { limit: 10, current: 10, window: 900 } })
    expect(typo.headers['retry-after']).toBe(String(typo.body.data.retryAfter))
    expect((await login(t, email, victim.password, '198.51.100.8')).status).toBe(429)

    // The holder's success forgot no failure of the guessing address.
    const guesser = await login(t, email, victim.password, attacker)
    expect(guesser.status).toBe(429)
    expect(guesser.body.accessToken).toBeUndefined()
  })

  it('when login bodies are malformed (a password that is no string), then each is 400 and spends neither budget', async () => {
    const user = await signUp(t)
    const from = '198.51.100.20'
    for (let i = 0; i < 12; i++) {
      const malformed = await t.http().post('/authentication').set('X-Forwarded-For', from).send({ strategy: 'local', email: user.user.email, password: [i] })
      expect(malformed.status, JSON.stringify(malformed.body)).toBe(400)
    }
    expect((await login(t, user.user.email, 'wrong password', from)).status).toBe(401)
    expect((await login(t, user.user.email, user.password, from)).status).toBe(201)
  })

  it('when a user logs in successfully many times, then successful logins are never limited', async () => {
    const user = await signUp(t)
    for (let i = 0; i < 15; i++) {
      const ok = await login(t, user.user.email, user.password)
      expect(ok.status, JSON.stringify(ok.body)).toBe(201)
    }
  })

  it('when a login succeeds after a few failures, then the e-mail\'s failures are forgotten', async () => {
    const user = await signUp(t)
    for (let i = 0; i < 9; i++) expect((await login(t, user.user.email, 'wrong')).status).toBe(401)
    expect((await login(t, user.user.email, user.password)).status).toBe(201)
    for (let i = 0; i < 10; i++) expect((await login(t, user.user.email, 'wrong')).status).toBe(401)
    expect((await login(t, user.user.email, 'wrong')).status).toBe(429)
  })

  it('when 20 wrong passwords for one e-mail arrive at once, then exactly 10 reach the password check', async () => {
    const user = await signUp(t)
    const attempts = await Promise.all(Array.from({ length: 20 }, () => login(t, user.user.email, 'wrong')))
    const statuses = attempts.map((r) => r.status).sort()
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(10).fill(429)])
  })
})

describe('failed logins per client address', () => {
  let t: TestApp
  beforeAll(async () => { t = await startApp({ loginRateLimitPoints: 10, loginRateLimitIpPoints: 10, loginRateLimitWindowS: 900 }) })
  afterAll(async () => { await t.close() })

  it('when one address fails 10 logins across many e-mails, then its next attempt gets 429 whatever the e-mail', async () => {
    const user = await signUp(t)
    for (let i = 0; i < 10; i++) {
      const failed = await login(t, uniqueEmail('guess'), 'password123')
      expect(failed.status, JSON.stringify(failed.body)).toBe(401)
    }
    const refused = await login(t, user.user.email, user.password)
    expect(refused.status).toBe(429)
    expect(refused.body).toMatchObject({ name: 'TooManyRequests', message: 'Rate limit exceeded', data: { limit: 10, current: 10, window: 900 } })
    expect(refused.headers['retry-after']).toBe(String(refused.body.data.retryAfter))
  })

  it('when the service trusts its proxy, then each forwarded client address has its own budget', async () => {
    const proxied = await startApp({ redisUrl: '', loginRateLimitPoints: 100, loginRateLimitIpPoints: 2, loginRateLimitWindowS: 900, trustProxy: true })
    try {
      const from = (address: string) =>
        proxied.http().post('/authentication').set('X-Forwarded-For', address).send({ strategy: 'local', email: uniqueEmail('guess'), password: 'password123' })
      expect((await from('203.0.113.1')).status).toBe(401)
      expect((await from('203.0.113.1')).status).toBe(401)
      expect((await from('203.0.113.1')).status).toBe(429)
      expect((await from('203.0.113.2')).status).toBe(401)
    } finally {
      await proxied.close()
    }
  })
})
