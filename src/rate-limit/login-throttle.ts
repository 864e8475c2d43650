import crypto from 'node:crypto'
import type { HookContext, NextFunction } from '../declarations.js'
import { rateLimitExceeded } from './rate-limiter.js'
import type { RateLimitPolicy } from './rate-limiter.js'

interface Attempt {
  key: string
  policy: RateLimitPolicy
  member: string
}

const digest = (text: string, length: number) => crypto.createHash('sha256').update(text).digest('hex').slice(0, length)

// E-mail addresses stay out of Redis: the key is a digest of the normalised address.
const emailKey = (email: string) => `login:email:${digest(email.trim().toLowerCase(), 32)}`
const addressKey = (address: string) => `login:ip:${address}`
/** Members of an e-mail's log start with their client address's tag, so that one address's failures can be forgotten alone. */
const addressTag = (address: string) => `${digest(address, 16)}/`

/**
 * Around hook of the login (`create` on authentication, local strategy), over REST and Socket.io
 * alike. Every attempt takes one unit of its e-mail's budget and of its client address's budget
 * (params.clientAddress) before the password is checked, so concurrent guesses cannot slip past
 * the limits. A successful login gives its units back and forgets the failures its client address
 * made against the e-mail; a failed one keeps them.
 *
 * A spent address budget refuses the attempt (the spec's 429). A spent e-mail budget refuses only
 * client addresses that have failed logins (or attempts in flight) in the window: anyone can spend
 * an e-mail's budget, so it alone must not lock its holder out. An address without failures still
 * gets its password checked; right, it signs in; wrong, it gets the 429 and from then on counts as
 * failed. Guessing past the e-mail's budget thus costs a fresh client address per guess.
 */
export const throttleFailedLogins = async (context: HookContext, next: NextFunction) => {
  const { app, params } = context
  const limiter = app.get('rateLimiter')
  const data = context.data as Record<string, unknown> | undefined
  const usernameField = app.get('authentication')?.local?.usernameField ?? 'email'
  const email = data?.[usernameField]
  if (!limiter || !params.provider || data?.strategy !== 'local' || typeof email !== 'string') return next()

  const windowS = app.get('loginRateLimitWindowS')
  const address = params.clientAddress ?? 'unknown'
  const byEmail: Attempt = { key: emailKey(email), policy: { points: app.get('loginRateLimitPoints'), windowS }, member: addressTag(address) + limiter.newMember() }
  const byAddress: Attempt = { key: addressKey(address), policy: { points: app.get('loginRateLimitIpPoints'), windowS }, member: limiter.newMember() }
  const [emailDecision, addressDecision] = await Promise.all([byEmail, byAddress].map((a) => limiter.consume(a.key, a.policy, a.member)))
  const giveBack = () =>
    Promise.all([
      emailDecision.allowed && limiter.release(byEmail.key, byEmail.member),
      addressDecision.allowed && limiter.release(byAddress.key, byAddress.member)
    ])
  // The address's own unit is in its count: more than one means failures (or attempts in flight) besides this one.
  const addressHasFailed = addressDecision.current > 1
  if (!addressDecision.allowed || (!emailDecision.allowed && addressHasFailed)) {
    await giveBack()
    throw rateLimitExceeded(addressDecision.allowed ? emailDecision : addressDecision)
  }

  try {
    await next()
  } catch (error: any) {
    // Only a wrong password is a failed login; malformed requests and server errors are not.
    if (error?.code !== 401) {
      await giveBack()
      throw error
    }
    throw emailDecision.allowed ? error : rateLimitExceeded(emailDecision)
  }
  await giveBack()
  await limiter.releaseByPrefix(byEmail.key, addressTag(address))
}

/**
 * Around hooks of the two password reset calls, after their validation: the login's budgets (per
 * e-mail and per client address, in the login window), counted on keys of their own so that
 * asking for links never locks a login out. A request for a link takes a unit of its e-mail's
 * and of its client address's budget whatever the answer, since each may send a mail; a spent
 * budget is the spec's 429. A redemption takes a unit of its client address's budget, kept when
 * the token is refused (a guess) and given back otherwise.
 */
export const throttlePasswordResetRequests = (context: HookContext, next: NextFunction) => throttlePasswordReset(context, next, 'request')
export const throttlePasswordResetRedemptions = (context: HookContext, next: NextFunction) => throttlePasswordReset(context, next, 'redemption')

async function throttlePasswordReset(context: HookContext, next: NextFunction, call: 'request' | 'redemption') {
  const { app, params } = context
  const limiter = app.get('rateLimiter')
  if (!limiter || !params.provider) return next()
  const windowS = app.get('loginRateLimitWindowS')
  const attempts: Attempt[] = [{ key: `password-reset:ip:${params.clientAddress ?? 'unknown'}`, policy: { points: app.get('loginRateLimitIpPoints'), windowS }, member: limiter.newMember() }]
  if (call === 'request') {
    const { email } = context.data as { email: string }
    attempts.push({ key: `password-reset:${emailKey(email)}`, policy: { points: app.get('loginRateLimitPoints'), windowS }, member: limiter.newMember() })
  }
  const decisions = await Promise.all(attempts.map((a) => limiter.consume(a.key, a.policy, a.member)))
  const giveBack = () => Promise.all(attempts.map((a, i) => decisions[i].allowed && limiter.release(a.key, a.member)))
  const refused = decisions.find((decision) => !decision.allowed)
  if (refused) {
    await giveBack()
    throw rateLimitExceeded(refused)
  }
  if (call === 'request') return next()
  try {
    await next()
  } catch (error: any) {
    if (error?.code !== 400) await giveBack()
    throw error
  }
  await giveBack()
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** The client's address: the REST request's (ctx.ip) or the socket's handshake's, behind a trusted proxy its X-Forwarded-For. */
    clientAddress?: string
  }
}
