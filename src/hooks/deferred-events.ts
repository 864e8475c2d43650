import { ERROR as KNEX_ORIGINAL_ERROR } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Params } from '@feathersjs/feathers'
import type { HookContext, NextFunction } from '../declarations.js'
import type { CascadedRow } from '../engine/record-service.js'

export interface PendingEvent {
  service: { emit: (event: string, data: unknown, context?: unknown) => unknown; rendered?: (rows: any[]) => Promise<unknown[]> }
  event: string
  data: unknown
  context?: HookContext
  /** The data is a stored row of the service's table: sent as the API sends the record (RecordService.rendered). */
  stored?: boolean
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** Set by inTransaction: the events of the calls made inside it, emitted once it commits. */
    pendingEvents?: PendingEvent[]
    /** The stored rows a bulk call changed besides its answer (announced by announceChanges). */
    changedRecords?: Record<string, unknown>[]
  }
}

/**
 * After hook of a bulk call whose answer is not its records (a bulk completion, a reorder): one
 * event per record it changed (params.changedRecords) on the records' own service, after the
 * caller's commit when it collects events, else at once (the call has committed); the call's
 * own event, which would carry the answer, is not sent.
 */
export const announceChanges = (path: string, event: 'patched' | 'removed') => async (context: HookContext) => {
  const records = context.params.changedRecords
  if (!records) return
  context.event = null
  const service = context.app.service(path as any) as unknown as PendingEvent['service']
  for (const data of records) emitAfterCommit(context.params, service, event, data)
}

/**
 * Around a delete of a resource whose records take dependants with them (softDeleteCascade):
 * each dependant the delete soft-deleted is announced as if it had been deleted on its own, one
 * event per record: its resource's webhook event, written in the delete's transaction
 * (params.alsoChanged, read by writeTransaction), and its service's removed event after the commit.
 */
export const announceCascade = async (context: HookContext, next: NextFunction) => {
  const cascaded: CascadedRow[] = (context.params.cascaded = [])
  await next()
  for (const [path, rows] of groupedByPath(cascaded)) {
    const service = context.app.service(path as any) as any
    const records: Record<string, any>[] = await service.rendered(rows, context.params)
    context.params.alsoChanged?.push(...records.map((record) => ({ path, method: 'remove' as const, record })))
    for (const record of records) emitAfterCommit(context.params, service, 'removed', record)
  }
}

/** The cascaded rows of each service, in the order they were deleted. */
function groupedByPath(cascaded: CascadedRow[]) {
  const groups = new Map<string, Record<string, any>[]>()
  for (const { path, record } of cascaded) groups.set(path, [...(groups.get(path) ?? []), record])
  return groups
}

/**
 * The event of a record a call wrote outside its own service's methods, once its write has
 * committed: into the caller's pending events when it collects them, else at once. No hook
 * context goes with it: the event is named after the record's service, not the call's.
 */
export function emitAfterCommit(params: Params, service: PendingEvent['service'], event: string, data: unknown) {
  if (params.pendingEvents) params.pendingEvents.push({ service, event, data })
  else service.emit(event, data)
}

/**
 * Run by the write transaction of every tenant resource (src/hooks/write-transaction.ts) when a
 * write runs inside inTransaction: its event (created, patched, removed) waits for the commit
 * instead of announcing a change that may yet be rolled back, placed at `at`, where the pending
 * events stood when the call began.
 */
export const deferEvent = async (context: HookContext, at?: number) => {
  const pending = context.params.pendingEvents
  if (!pending || typeof context.event !== 'string') return
  const results = Array.isArray(context.result) ? context.result : [context.result]
  const own = results.map((data) => ({ service: context.self as any, event: context.event as string, data, context }))
  // A call's own events come before those of what it changed on the way (a deleted conversation's
  // messages), which it queued while it ran: from `at` on.
  pending.splice(at ?? pending.length, 0, ...own)
  context.event = null
}

/** The params a call passes to run inside a transaction: the transaction and its pending events. */
export interface TransactionParams {
  transaction: { trx: Knex.Transaction }
  pendingEvents: PendingEvent[]
}

/** A transaction opened by openTransaction, which its opener ends. */
export interface OpenTransaction {
  params: TransactionParams
  /** Commits, then emits the pending events in call order. */
  commit: () => Promise<void>
  /** Rolls back and drops the pending events; gives the error to throw for the one that ended it. */
  rollback: (error: unknown) => Promise<unknown>
}

/**
 * Opens a transaction whose events wait for its commit. A call that fails because an earlier
 * statement failed and was caught fails with that statement's error, the one that says what was
 * wrong (rollback gives it).
 */
export async function openTransaction(knex: Knex): Promise<OpenTransaction> {
  const trx = await knex.transaction()
  const pendingEvents: PendingEvent[] = []
  const causeOf = abortingFailure(trx)
  return {
    params: { transaction: { trx }, pendingEvents },
    async commit() {
      await trx.commit()
      await emitAll(pendingEvents.splice(0))
    },
    async rollback(error) {
      pendingEvents.length = 0
      // A transaction whose connection was lost cannot be rolled back; the error that ended it stands.
      await trx.rollback().catch(() => undefined)
      return causeOf(error)
    }
  }
}

/**
 * Emits events in their order; the stored rows among them are written as the API sends the
 * record first, in one statement per service, from the values the write returned.
 */
async function emitAll(events: PendingEvent[]) {
  const stored = new Map<PendingEvent['service'], PendingEvent[]>()
  for (const pending of events) if (pending.stored) stored.set(pending.service, [...(stored.get(pending.service) ?? []), pending])
  for (const [service, pending] of stored) {
    const records = await service.rendered!(pending.map(({ data }) => data))
    pending.forEach((event, index) => { event.data = records[index] })
  }
  for (const { service, event, data, context } of events) service.emit(event, data, context)
}

/** Runs several service calls in one transaction: fn gets the params to pass to each call. */
export async function inTransaction<T>(knex: Knex, fn: (params: TransactionParams) => Promise<T>): Promise<T> {
  const open = await openTransaction(knex)
  let result: T
  try {
    result = await fn(open.params)
  } catch (error) {
    throw await open.rollback(error)
  }
  await open.commit()
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
