import type { HookContext } from '../declarations.js'
import { rateLimitExceeded, rateLimitHeaders } from './rate-limiter.js'

declare module '@feathersjs/feathers' {
  interface Params {
    /** An internal batch made for a client (an import's chunk) counts against the budget as the client's own would. */
    countsBatchBudget?: boolean
  }
}

/**
 * The records of a batch count against the organization's batch record budget
 * (BATCH_RECORDS_PER_HOUR per sliding hour), on top of the one request the call counts as
 * against the API-key limit. Over the budget: the spec's 429, nothing written.
 */
export async function countBatchRecords(context: HookContext, organizationId: number, count: number) {
  const limiter = context.app.get('rateLimiter')
  const { provider, countsBatchBudget, dryRun } = context.params
  if (!limiter || !(provider || countsBatchBudget) || dryRun) return
  const decision = await limiter.consumeUnits(`batch-records:org:${organizationId}`, { points: context.app.get('batchRecordsPerHour'), windowS: 3600 }, count)
  if (!decision.allowed) {
    context.http = { ...context.http, headers: { ...context.http?.headers, ...rateLimitHeaders(decision) } }
    throw rateLimitExceeded(decision)
  }
}
