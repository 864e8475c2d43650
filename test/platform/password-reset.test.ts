import crypto from 'node:crypto'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { signUp, uniqueEmail } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'

const APP_URL = 'https://app.example'
const INVALID_RESET = 'The password reset token is invalid, has already been used or has expired'
const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex')

/** Password reset: custom methods of /users, reached without credentials. */
describe('password reset', () => {
  let t: TestApp

  beforeAll(async () => {
    t = await startApp({ appUrl: APP_URL, loginRateLimitIpPoints: 1000 })
  })
  afterAll(async () => { await t.close() })

  const requestReset = (email: string, app = t) => app.http().post('/users').set('X-Service-Method', 'request-password-reset').send({ email })
  const resetPassword = (body: Record<string, unknown>, app = t) => app.http().post('/users').set('X-Service-Method', 'reset-password').send(body)
  const login = (email: string, password: string) => t.http().post('/authentication').send({ strategy: 'local', email, password })
  const resetMails = (email: string, app = t) => app.db('mail_outbox').where({ recipient: email.toLowerCase(), kind: 'password-reset' }).orderBy('id')
  const resetToken = async (email: string, app = t) => {
    const match = (await resetMails(email, app)).at(-1)?.text_body.match(/\/reset-password\?token=([A-Za-z0-9_-]+)/)
    return match ? decodeURIComponent(match[1]) : undefined
  }

  it('when a reset is asked for an address with an account and for one without, then both answer the same 202, and only the account gets a link, stored hashed', async () => {
    const { user } = await signUp(t)
    const known = await requestReset(user.email.toUpperCase())
    const unknown = await requestReset(uniqueEmail('nobody'))
    expect(known.status).toBe(202)
    expect(unknown.status).toBe(202)
    expect(known.body).toEqual(unknown.body)
    expect(known.body.message).toMatch(/^If an account has this address/)
    const [mail] = await resetMails(user.email)
    expect(mail.text_body).toContain(`${APP_URL}/reset-password?token=`)
    const token = (await resetToken(user.email))!
    const stored = await t.db('password_resets').where({ user_id: user.id }).first()
    expect(stored.token_hash).toBe(sha256(token))
    expect(JSON.stringify(stored)).not.toContain(token)
    // Valid one hour by default.
    const lifetimeS = (new Date(stored.expires_at).getTime() - new Date(stored.created_at).getTime()) / 1000
    expect(lifetimeS).toBeCloseTo(3600, -1)
  })

  it('when the link is redeemed, then 200, the new password signs in, the old one and every earlier JWT do not, the address is verified, and the link and every other open link are spent', async () => {
    const { user, password, token: jwt } = await signUp(t)
    expect((await t.db('users').where({ id: user.id }).first()).email_verified_at).toBeNull()
    await requestReset(user.email)
    const first = (await resetToken(user.email))!
    await requestReset(user.email)
    const second = (await resetToken(user.email))!

    const res = await resetPassword({ token: second, password: 'a fresh secret' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ id: user.id, email: user.email, email_verified_at: expect.any(String) })
    expect(res.body).not.toHaveProperty('password')
    expect((await login(user.email, 'a fresh secret')).status).toBe(201)
    expect((await login(user.email, password)).status).toBe(401)
    expect((await t.http().get(`/users/${user.id}`).set({ Authorization: `Bearer ${jwt}` })).status).toBe(401)

    for (const spent of [second, first]) {
      const again = await resetPassword({ token: spent, password: 'yet another secret' })
      expect(again.status).toBe(400)
      expect(again.body).toMatchObject({ name: 'BadRequest', message: INVALID_RESET, errors: { token: expect.any(String) } })
    }
    expect((await login(user.email, 'a fresh secret')).status).toBe(201)
  })

  it('when a link has expired, or was mailed to an address the account has since changed, then 400 and the password stays', async () => {
    const expired = await signUp(t)
    await requestReset(expired.user.email)
    await t.db('password_resets').where({ user_id: expired.user.id }).update({ expires_at: t.db.raw("now() - interval '1 second'") })
    expect((await resetPassword({ token: (await resetToken(expired.user.email))!, password: 'a fresh secret' })).status).toBe(400)
    expect((await login(expired.user.email, expired.password)).status).toBe(201)

    const moved = await signUp(t)
    await requestReset(moved.user.email)
    const newEmail = uniqueEmail('moved')
    const patched = await t.http().patch(`/users/${moved.user.id}`).set({ Authorization: `Bearer ${moved.token}` }).send({ email: newEmail, current_password: moved.password })
    expect(patched.status).toBe(200)
    expect((await resetPassword({ token: (await resetToken(moved.user.email))!, password: 'a fresh secret' })).status).toBe(400)
    expect((await login(newEmail, moved.password)).status).toBe(201)
  })

  it('when a body is malformed, then 400 naming the field', async () => {
    const short = await resetPassword({ token: 'abc', password: 'short' })
    expect(short.status).toBe(400)
    expect(short.body.errors).toEqual({ password: 'must have at least 8 characters' })
    const missing = await t.http().post('/users').set('X-Service-Method', 'request-password-reset').send({})
    expect(missing.body.errors).toEqual({ email: 'is required' })
  })

  it("when the password is reset, then within 5 s the account's open sockets are disconnected", async () => {
    const { user, token } = await signUp(t)
    const sockets = await serveSockets(t)
    try {
      const listener = await sockets.listen({ accessToken: token })
      await requestReset(user.email)
      expect((await resetPassword({ token: (await resetToken(user.email))!, password: 'a fresh secret' })).status).toBe(200)
      const ended = await Promise.race([listener.cutOff.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 5_000))])
      expect(ended).toBe(true)
    } finally {
      await sockets.close()
    }
  })

  describe('limits', () => {
    let limited: TestApp
    beforeAll(async () => {
      limited = await startApp({ appUrl: APP_URL, loginRateLimitPoints: 3, loginRateLimitIpPoints: 5 })
    })
    afterAll(async () => { await limited.close() })

    it("when an e-mail's reset budget is spent, then 429 and no more mail, while the login of that e-mail still works", async () => {
      const { user, password } = await signUp(limited)
      for (let i = 0; i < 3; i++) expect((await requestReset(user.email, limited)).status).toBe(202)
      const refused = await requestReset(user.email, limited)
      expect(refused.status).toBe(429)
      expect(refused.body).toMatchObject({ name: 'TooManyRequests', data: { limit: 3, retryAfter: expect.any(Number) } })
      expect(await resetMails(user.email, limited)).toHaveLength(3)
      expect((await limited.http().post('/authentication').send({ strategy: 'local', email: user.email, password })).status).toBe(201)
    })

    it('when a client address has guessed tokens past its budget, then 429 even for a good token; a redeemed link gives its unit back', async () => {
      const guessing = await startApp({ appUrl: APP_URL, loginRateLimitIpPoints: 3 })
      try {
        const { user } = await signUp(guessing)
        const tokenFor = async () => {
          await requestReset(user.email, guessing)
          return (await resetToken(user.email, guessing))!
        }
        // Two requests take two of the address's three units; a redemption takes one and gives it back.
        expect((await resetPassword({ token: await tokenFor(), password: 'a fresh secret' }, guessing)).status).toBe(200)
        const good = await tokenFor()
        expect((await resetPassword({ token: 'a guess', password: 'a fresh secret' }, guessing)).status).toBe(400)
        expect((await resetPassword({ token: good, password: 'a fresh secret' }, guessing)).status).toBe(429)
      } finally {
        await guessing.close()
      }
    })
  })

  describe('without APP_URL', () => {
    it('when the mailed link is opened, then the service answers a page that sets the new password with the same call', async () => {
      const own = await startApp({ port: 4568 })
      try {
        const { user } = await signUp(own)
        await requestReset(user.email, own)
        const mail = (await resetMails(user.email, own)).at(-1)
        const link = new URL(/http:\/\/localhost:4568\/\S+/.exec(mail.text_body)![0])
        const page = await own.http().get(link.pathname + link.search)
        expect(page.status).toBe(200)
        expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
        expect(page.text).toContain('<h1>Choose a new password</h1>')
        expect(page.text).toContain("'X-Service-Method': 'reset-password'")
        expect((await resetPassword({ token: link.searchParams.get('token'), password: 'a fresh secret' }, own)).status).toBe(200)
      } finally {
        await own.close()
      }
    })
  })
})
