import type { HookContext, NextFunction } from '../declarations.js'
import { isConnectionLoss, isShardMoved } from '../db-connections.js'
import { isReadCall } from './authenticate.js'
import { originalErrorOf } from './errors.js'

declare module '@feathersjs/feathers' {
  interface Params {
    /** The call is the one retry of a read whose connection was lost (retryReadOnConnectionLoss). */
    retryOfLostConnection?: boolean
  }
}

const RETRY_WAIT_MS = 50

const copyOf = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? { ...value } : value)

/**
 * A read that lost its connection (a database failover, a restart, an idle-session timeout) or
 * met its shard as Citus replaced it (a tenant isolated, a rebalance) is made once more, from its start as the transport called it, on fresh connections: the client
 * gets its answer rather than a 503. Calls from outside only, so once per request, and never one
 * inside a transaction; the rate limit counted for the first attempt stands for the retry.
 */
export const retryReadOnConnectionLoss = async (context: HookContext, next: NextFunction) => {
  const { params } = context
  if (!params.provider || params.transaction || params.retryOfLostConnection || !isReadCall(context)) return next()
  // The hooks below may change the arguments in place: the retry starts from copies.
  const args = context.arguments.slice(0, -1).map(copyOf)
  const firstParams = { ...params, query: copyOf(params.query) }
  try {
    await next()
  } catch (error) {
    const original = originalErrorOf(error)
    if (!isConnectionLoss(original) && !isShardMoved(original)) throw error
    // A server usually drops every connection at once, and a pool hears of each when its socket
    // closes, which may come after the statement's error: a short wait lets the pools discard
    // them before the retry takes one.
    await new Promise((resolve) => setTimeout(resolve, RETRY_WAIT_MS))
    const retryParams = { ...firstParams, rateLimit: context.params.rateLimit, retryOfLostConnection: true }
    context.result = await (context.self as any)[context.method](...args, retryParams)
  }
}
