import type { Knex } from 'knex'
import type { HookContext, NextFunction } from '../declarations.js'
import { enqueueEvents, eventTypeOf, hasSubscribers, nobodySubscribed, previousAttributes } from '../webhooks/events.js'
import type { ChangedRecord } from '../webhooks/events.js'
import { isRecordId } from '../schemas.js'
import { secretFieldsOf } from '../secret-fields.js'
import { guardWrite } from '../engine/write-guards.js'
import type { WriteGuard } from '../engine/write-guards.js'
import { deferEvent, inTransaction, openTransaction } from './deferred-events.js'
import type { OpenTransaction } from './deferred-events.js'
import { storeAnswerOfCall } from './idempotency.js'
import { accessibleOrganizations } from './tenant-scope.js'

/** A record as the API returns it (the resource's result and external resolvers). */
export type Represent = (record: Record<string, any>, context: HookContext) => Promise<Record<string, any>>

const READS = new Set(['find', 'get'])

/** A change a call makes besides its own records' (a conversation a message moves, a contact a booking creates, rows of a bulk update). */
export interface AlsoChanged {
  /** The service path of the changed record's resource. */
  path: string
  method: 'create' | 'patch' | 'remove'
  /** The stored row. */
  record: Record<string, any>
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** Changes the method made besides its answer's records; each becomes the event of its resource (writeTransaction). */
    alsoChanged?: AlsoChanged[]
  }
}

// Each tenant resource's representation (its result and external resolvers), for the events of
// records another service's call changed.
const representations = new Map<string, Represent>()

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
 *
 * With `checksInWrite` (the resource's single writes are RecordService's own statement), "nobody
 * subscribed" is a guard of that statement instead of a query before it: the common write is one
 * statement, and only when the guard fails does the write open its transaction and run again there.
 */
export const writeTransaction = (path: string, represent: Represent, { alsoChanges = {}, checksInWrite = false }: { alsoChanges?: Record<string, string[]>; checksInWrite?: boolean } = {}) => {
  representations.set(path, represent)
  return writeTransactionHook(path, represent, alsoChanges, checksInWrite)
}

const writeTransactionHook = (path: string, represent: Represent, alsoChanges: Record<string, string[]>, checksInWrite: boolean) => async (context: HookContext, next: NextFunction) => {
  if (READS.has(context.method)) return next()
  const types = [...eventTypesOf(path, context.method), ...(alsoChanges[context.method] ?? [])]
  const outer: Knex.Transaction | undefined = context.params.transaction?.trx
  if (outer) {
    await runInside(outer, context, next, path, represent)
    // Its events wait for the caller's commit too (when the caller collects them).
    return deferEvent(context)
  }
  const knex = context.app.get('knex')
  const claimed = context.params.idempotency
  const storesAnswer = Boolean(claimed && !claimed.stored && context.params.provider)
  if (!storesAnswer) {
    const organizations = organizationsOf(context)
    if (checksInWrite && types.length > 0) {
      const write = new OpenedWhenSubscribed(context, path, types, organizations)
      if (guardWrite(context, write.guard())) return write.run(next, represent)
    }
    if (!(await hasSubscribers(knex, types, organizations))) return next()
  }
  await inTransaction(knex, async (inside) => {
    Object.assign(context.params, inside)
    try {
      await runInside(inside.transaction.trx, context, next, path, represent)
      await deferEvent(context)
    } finally {
      delete context.params.transaction
      delete context.params.pendingEvents
    }
  })
}

/**
 * A single write whose statement holds "nobody subscribed" as a guard: when the guard fails, the
 * write opens its transaction (reading a patch's stored row there) before its statement runs
 * again, and its events are enqueued and committed with it.
 */
class OpenedWhenSubscribed {
  private open?: OpenTransaction
  private before?: Record<string, any>

  constructor(
    private readonly context: HookContext,
    private readonly path: string,
    private readonly types: string[],
    private readonly organizations: number[] | null
  ) {}

  guard(): WriteGuard {
    const knex = this.context.app.get('knex')
    return {
      holds: nobodySubscribed(this.types, this.organizations),
      explain: async () => {
        if (!(await hasSubscribers(knex, this.types, this.organizations))) return
        this.open = await openTransaction(knex)
        Object.assign(this.context.params, this.open.params)
        this.before = await beforeWrite(this.open.params.transaction.trx, this.context, this.path)
        return this.open.params
      }
    }
  }

  async run(next: NextFunction, represent: Represent) {
    const { context } = this
    try {
      await next()
      if (!this.open) return
      await afterWrite(this.open.params.transaction.trx, context, this.before, this.path, represent)
      await deferEvent(context)
    } catch (error) {
      throw this.open ? await this.open.rollback(error) : error
    } finally {
      delete context.params.transaction
      delete context.params.pendingEvents
    }
    await this.open?.commit()
  }
}

/** The batch methods (docs/bulk-and-sync.md) and the methods whose events their records have. */
const BATCH_METHODS: Record<string, string[]> = { upsert: ['create', 'patch'], 'batch-update': ['patch'], 'batch-delete': ['remove'] }
const METHOD_OF_EVENT = { created: 'create', patched: 'patch', removed: 'remove' } as const

/** The event types a call of this method may cause. */
const eventTypesOf = (path: string, method: string) =>
  (BATCH_METHODS[method] ?? [method]).map((m) => eventTypeOf(path, m)).filter((type): type is string => Boolean(type))

/** The write and what goes with it in its transaction, which is open already. */
async function runInside(trx: Knex.Transaction, context: HookContext, next: NextFunction, path: string, represent: Represent) {
  const before = await beforeWrite(trx, context, path)
  await next()
  await afterWrite(trx, context, before, path, represent)
}

/**
 * Before the write, in its transaction: the stored row a patch with an event is about to change,
 * and the list of what the call changes besides (shared by reference: calls inside this one, with
 * params copied, add to it).
 */
async function beforeWrite(trx: Knex.Transaction, context: HookContext, path: string) {
  context.params.alsoChanged ??= []
  const patchesOne = context.method === 'patch' && context.id !== null && context.id !== undefined
  return patchesOne && eventTypeOf(path, context.method) ? storedRecord(trx, context) : undefined
}

/** After the write, in its transaction: its events, those of what it changed besides, its stored answer. */
async function afterWrite(trx: Knex.Transaction, context: HookContext, before: Record<string, any> | undefined, path: string, represent: Represent) {
  const type = eventTypeOf(path, context.method)
  const alsoChanged = context.params.alsoChanged ?? []
  let enqueued = 0
  if (type) enqueued += await enqueueEvents(trx, type, await changedRecords(context, before, represent), secretsOf(context, path))
  if (context.params.batchEvents) enqueued += await enqueueBatchEvents(trx, context, path)
  enqueued += await enqueueAlsoChanged(trx, alsoChanged.splice(0), context)
  if (enqueued) context.app.get('outbox').kickAfterCommit(trx)
  await storeAnswerOfCall(trx, context)
}

/**
 * The events of the records a call changed besides its answer's, in the order they changed: a
 * run of changes with one event type costs one subscriber check, and the records are represented
 * and enqueued together only when somebody subscribed (a bulk update of 500 activities is not
 * 500 queries).
 */
async function enqueueAlsoChanged(trx: Knex.Transaction, changes: AlsoChanged[], context: HookContext) {
  let enqueued = 0
  for (let start = 0; start < changes.length; ) {
    const { path, method } = changes[start]
    const type = eventTypeOf(path, method)
    let end = start + 1
    while (end < changes.length && changes[end].path === path && changes[end].method === method) end += 1
    const run = changes.slice(start, end)
    start = end
    const representation = representations.get(path)
    if (!type || !representation) continue
    const organizations = [...new Set(run.map(({ record }) => record.organization_id).filter((id) => typeof id === 'number'))]
    if (!(await hasSubscribers(trx, [type], organizations))) continue
    const records = await Promise.all(run.map(async ({ record }) => ({ object: await representation(record, context) })))
    enqueued += await enqueueEvents(trx, type, records, secretsOf(context, path))
  }
  return enqueued
}

/**
 * The events of a batch custom method, one per record like single writes, in the order of its
 * answer: consecutive records with the same event are enqueued together.
 */
async function enqueueBatchEvents(trx: Knex.Transaction, context: HookContext, path: string) {
  const events = context.params.batchEvents!
  const result = (context.dispatch ?? context.result) as any
  const records: Record<string, any>[] = Array.isArray(result) ? result : result?.data ?? []
  let enqueued = 0
  for (let start = 0; start < records.length; ) {
    let end = start + 1
    while (end < records.length && events[end] === events[start]) end += 1
    const type = eventTypeOf(path, METHOD_OF_EVENT[events[start] as keyof typeof METHOD_OF_EVENT])
    if (type) enqueued += await enqueueEvents(trx, type, records.slice(start, end).map((object) => ({ object })), secretsOf(context, path))
    start = end
  }
  return enqueued
}

/** The organizations the call may touch: the caller's, or the one a system call names (null: unknown). */
function organizationsOf(context: HookContext): number[] | null {
  const { caller } = context.params
  if (caller) return accessibleOrganizations(caller)
  const named = (context.data as any)?.organization_id ?? context.params.query?.organization_id
  return typeof named === 'number' ? [named] : null
}

/** The secret fields of a resource's records, which its events leave out. */
const secretsOf = (context: HookContext, path: string) => secretFieldsOf(context.app.service(path as any))

/**
 * The stored row a patch is about to change (any organization: it is only used if the patch
 * succeeds, in the caller's). None for a malformed id, which the query validation refuses before
 * any SQL; a failed read is the call's error, never swallowed: its statement has aborted the
 * transaction, and every later one would fail with "current transaction is aborted".
 */
async function storedRecord(trx: Knex.Transaction, context: HookContext): Promise<Record<string, any> | undefined> {
  if (!isRecordId(context.id)) return undefined
  return (context.self as any).storedRow(context.id, { transaction: { trx }, query: {} }).catch((error: any) => {
    if (error?.code === 404) return undefined
    throw error
  })
}

/** The records the call answered with, as the API returns them, with the old values of what a patch changed. */
async function changedRecords(context: HookContext, before: Record<string, any> | undefined, represent: Represent): Promise<ChangedRecord[]> {
  const sent = context.dispatch ?? context.result
  const objects: Record<string, any>[] = (Array.isArray(sent) ? sent : [sent]).filter((record) => record && typeof record === 'object')
  if (!before) return objects.map((object) => ({ object }))
  const old = await represent(before, context)
  return objects.map((object) => ({ object, previous: object.id === before.id ? previousAttributes(old, object) : undefined }))
}
