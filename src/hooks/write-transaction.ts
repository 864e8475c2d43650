import type { Knex } from 'knex'
import type { HookContext, NextFunction } from '../declarations.js'
import { enqueueEvents, eventTypeOf, hasSubscribers, previousAttributes } from '../webhooks/events.js'
import type { ChangedRecord } from '../webhooks/events.js'
import { deferEvent, inTransaction } from './deferred-events.js'
import { storeAnswerOfCall } from './idempotency.js'
import { accessibleOrganizations } from './tenant-scope.js'

/** A record as the API returns it (the resource's result and external resolvers). */
export type Represent = (record: Record<string, any>, context: HookContext) => Promise<Record<string, any>>

const READS = new Set(['find', 'get'])

/**
 * The transaction of a tenant resource's write, when the write has company: the webhook events
 * it causes and the answer stored for its Idempotency-Key are written in the same transaction as
 * the change, so they exist exactly when the change does. Placed around the result resolvers, so
 * both see the record as the API returns it.
 *
 * A call made inside a caller's transaction (params.transaction) adds its events to that one.
 * Otherwise a transaction is opened only when the request carries an Idempotency-Key or an
 * active subscription wants the event; every other write runs as before. Its Feathers events
 * wait for the commit (deferred events).
 */
export const writeTransaction = (path: string, represent: Represent) => async (context: HookContext, next: NextFunction) => {
  if (READS.has(context.method)) return next()
  const type = eventTypeOf(path, context.method)
  const outer: Knex.Transaction | undefined = context.params.transaction?.trx
  if (outer) return runInside(outer, context, next, type, represent)
  const knex = context.app.get('knex')
  const claimed = context.params.idempotency
  const storesAnswer = Boolean(claimed && !claimed.stored && context.params.provider)
  if (!storesAnswer && !(type && (await hasSubscribers(knex, type, organizationsOf(context))))) return next()
  await inTransaction(knex, async (inside) => {
    Object.assign(context.params, inside)
    try {
      await runInside(inside.transaction.trx, context, next, type, represent)
      await deferEvent(context)
    } finally {
      delete context.params.transaction
      delete context.params.pendingEvents
    }
  })
}

async function runInside(trx: Knex.Transaction, context: HookContext, next: NextFunction, type: string | undefined, represent: Represent) {
  const before = type && context.method === 'patch' && context.id !== null && context.id !== undefined ? await storedRecord(trx, context) : undefined
  await next()
  if (type) {
    const changed = await changedRecords(context, before, represent)
    if (await enqueueEvents(trx, type, changed)) context.app.get('outbox').kickAfterCommit(trx)
  }
  await storeAnswerOfCall(trx, context)
}

/** The organizations the call may touch: the caller's, or the one a system call names (null: unknown). */
function organizationsOf(context: HookContext): number[] | null {
  const { caller } = context.params
  if (caller) return accessibleOrganizations(caller)
  const named = (context.data as any)?.organization_id ?? context.params.query?.organization_id
  return typeof named === 'number' ? [named] : null
}

/** The stored row a patch is about to change (any organization: it is only used if the patch succeeds, in the caller's). */
async function storedRecord(trx: Knex.Transaction, context: HookContext) {
  return (context.self as any)._get(context.id, { transaction: { trx }, query: {} }).catch(() => undefined) as Promise<Record<string, any> | undefined>
}

/** The records the call answered with, as the API returns them, with the old values of what a patch changed. */
async function changedRecords(context: HookContext, before: Record<string, any> | undefined, represent: Represent): Promise<ChangedRecord[]> {
  const sent = context.dispatch ?? context.result
  const objects: Record<string, any>[] = (Array.isArray(sent) ? sent : [sent]).filter((record) => record && typeof record === 'object')
  if (!before) return objects.map((object) => ({ object }))
  const old = await represent(before, context)
  return objects.map((object) => ({ object, previous: object.id === before.id ? previousAttributes(old, object) : undefined }))
}
