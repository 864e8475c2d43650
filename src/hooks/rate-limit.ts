import type { HookContext } from '../declarations.js'
import { rateLimitExceeded, rateLimitHeaders } from '../rate-limit/index.js'
import type { RateLimitDecision } from '../rate-limit/index.js'

declare module '@feathersjs/feathers' {
  interface Params {
    /** The rate-limit decision of this request; set once, so nested calls are not counted again. */
    rateLimit?: RateLimitDecision
  }
}

export const organizationKey = (organizationId: number) => `org:${organizationId}`

/**
 * Counts an external API-key request against the key's organization, before the service runs.
 * Every such response carries the RateLimit headers; over the limit, the request stops here
 * with the spec's 429 and reaches neither the service nor the database. Bearer-JWT requests
 * and internal calls are not counted.
 */
export async function limitApiKeyRequests(context: HookContext) {
  const limiter = context.app.get('rateLimiter')
  const { provider, caller, rateLimit } = context.params
  const organizationId = caller?.apiKeyOrganizationId
  if (!limiter || !provider || organizationId === undefined || rateLimit) return
  const decision = await limiter.consume(organizationKey(organizationId), {
    points: context.app.get('rateLimitPoints'),
    windowS: context.app.get('rateLimitWindowS')
  })
  context.params.rateLimit = decision
  context.http = { ...context.http, headers: { ...context.http?.headers, ...rateLimitHeaders(decision) } }
  if (!decision.allowed) throw rateLimitExceeded(decision)
}
