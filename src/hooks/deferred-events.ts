import { ERROR as KNEX_ORIGINAL_ERROR } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { HookContext } from '../declarations.js'

export interface PendingEvent {
  service: { emit: (event: string, data: unknown, context?: unknown) => unknown }
  event: string
  data: unknown
  context?: HookContext
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** Set by inTransaction: the events of the calls made inside it, emitted once it commits. */
    pendingEvents?: PendingEvent[]
  }
}

/**
 * After hook of every write that may run inside inTransaction: its event (created, patched,
 * removed) waits for the commit instead of announcing a change that may yet be rolled back.
 */
export const deferEvent = async (context: HookContext) => {
  const pending = context.params.pendingEvents
  if (!pending || typeof context.event !== 'string') return
  const results = Array.isArray(context.result) ? context.result : [context.result]
  for (const data of results) pending.push({ service: context.self as any, event: context.event, data, context })
  context.event = null
}

/**
 * Runs several service calls in one transaction: fn gets the params to pass to each call
 * (the transaction and the list of pending events). The events are emitted after the commit,
 * in call order, and dropped on rollback. A call that fails because an earlier statement failed
 * and was caught fails with that statement's error, the one that says what was wrong.
 */
export async function inTransaction<T>(knex: Knex, fn: (params: { transaction: { trx: Knex.Transaction }; pendingEvents: PendingEvent[] }) => Promise<T>): Promise<T> {
  const pendingEvents: PendingEvent[] = []
  const result = await knex.transaction(async (trx) => {
    const causeOf = abortingFailure(trx)
    try {
      return await fn({ transaction: { trx }, pendingEvents })
    } catch (error) {
      throw causeOf(error)
    }
  })
  for (const { service, event, data, context } of pendingEvents) service.emit(event, data, context)
  return result
}

// Postgres refuses every statement after a failed one in a transaction with this code.
const TRANSACTION_ABORTED = '25P02'
const sqlStateOf = (error: any): unknown => (error?.[KNEX_ORIGINAL_ERROR] ?? error)?.code

/** For an error of a transaction: the failed statement that aborted it, when the error is only the abort. */
function abortingFailure(trx: Knex.Transaction) {
  let latest: unknown
  trx.on('query-error', (error: unknown) => {
    if (sqlStateOf(error) !== TRANSACTION_ABORTED) latest = error
  })
  return (error: unknown) => (sqlStateOf(error) === TRANSACTION_ABORTED && latest !== undefined ? latest : error)
}
