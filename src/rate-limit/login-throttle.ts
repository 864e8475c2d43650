import crypto from 'node:crypto'
import type { HookContext, NextFunction } from '../declarations.js'
import { rateLimitExceeded } from './rate-limiter.js'
import type { RateLimitPolicy } from './rate-limiter.js'

interface Attempt {
  key: string
  policy: RateLimitPolicy
  member: string
}

// E-mail addresses stay out of Redis: the key is a digest of the normalised address.
const emailKey = (email: string) =>
  `login:email:${crypto.createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 32)}`
const addressKey = (address: string) => `login:ip:${address}`

/**
 * Around hook of the login (`create` on authentication, local strategy), over REST and Socket.io
 * alike: every attempt takes one unit of its e-mail's budget and of its client address's budget
 * (params.clientAddress) before the password is checked, so concurrent guesses cannot slip past
 * the limit. A successful login gives the unit back (and clears the e-mail's failures); a failed
 * one keeps it. With a budget spent, the attempt gets the spec's 429 without reaching the
 * password check.
 */
export const throttleFailedLogins = async (context: HookContext, next: NextFunction) => {
  const { app, params } = context
  const limiter = app.get('rateLimiter')
  const data = context.data as Record<string, unknown> | undefined
  const usernameField = app.get('authentication')?.local?.usernameField ?? 'email'
  const email = data?.[usernameField]
  if (!limiter || !params.provider || data?.strategy !== 'local' || typeof email !== 'string') return next()

  const windowS = app.get('loginRateLimitWindowS')
  const attempts: Attempt[] = [
    { key: emailKey(email), policy: { points: app.get('loginRateLimitPoints'), windowS }, member: limiter.newMember() },
    { key: addressKey(params.clientAddress ?? 'unknown'), policy: { points: app.get('loginRateLimitIpPoints'), windowS }, member: limiter.newMember() }
  ]
  const decisions = await Promise.all(attempts.map((a) => limiter.consume(a.key, a.policy, a.member)))
  const refusedAt = decisions.findIndex((d) => !d.allowed)
  const giveBack = () => Promise.all(attempts.map((a, i) => decisions[i].allowed && limiter.release(a.key, a.member)))
  if (refusedAt >= 0) {
    await giveBack()
    throw rateLimitExceeded(decisions[refusedAt])
  }

  try {
    await next()
  } catch (error: any) {
    // Only a wrong password is a failed login; malformed requests and server errors are not.
    if (error?.code !== 401) await giveBack()
    throw error
  }
  await giveBack()
  await limiter.reset(attempts[0].key)
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** The client's address: the REST request's (ctx.ip) or the socket's handshake's, behind a trusted proxy its X-Forwarded-For. */
    clientAddress?: string
  }
}
