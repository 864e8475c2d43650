import type { Knex } from 'knex'
import type { HookContext, NextFunction } from '../declarations.js'
import { enqueueEvents, eventTypeOf, hasSubscribers, nobodySubscribed, previousAttributes } from '../webhook-events.js'
import type { ChangedRecord } from '../webhook-events.js'
import { isRecordId } from '../schemas.js'
import { secretFieldsOf } from '../secret-fields.js'
import { WriteGuardsFailed, checkGuards, guardWrite } from '../engine/write-guards.js'
import { deferEvent, inTransaction } from './deferred-events.js'
import type { TransactionParams } from './deferred-events.js'
import { storeAnswerOfCall } from './idempotency.js'
import { accessibleOrganizations } from './tenant-scope.js'

const READS = new Set(['find', 'get'])

/** A change a call makes besides its own records' (a conversation a message moves, a contact a booking creates, rows of a bulk update). */
export interface AlsoChanged {
  /** The service path of the changed record's resource. */
  path: string
  method: 'create' | 'patch' | 'remove'
  /** The record as the API sends it (its service's `rendered`). */
  record: Record<string, any>
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** Changes the method made besides its answer's records; each becomes the event of its resource (writeTransaction). */
    alsoChanged?: AlsoChanged[]
  }
}

export interface WriteTransactionOptions {
  /** Per method, the event types of records besides its answer's that it also changes (params.alsoChanged). */
  alsoChanges?: Record<string, string[]>
  /** The resource's single writes check in their own statement (write-guards.ts), "nobody subscribed" too. */
  checksInWrite?: boolean
  /** Methods that always run in a transaction of this hook (a delete that takes dependants with it: their events follow its own). */
  inTransaction?: string[]
  /** Custom methods that only read (a search, an export): they run outside any transaction, as find and get do. */
  reads?: string[]
}

/**
 * The transaction of a tenant resource's write, when the write has company: the webhook events
 * it causes and the answer stored for its Idempotency-Key are written in the same transaction as
 * the change, so they exist exactly when the change does. Every record involved is already in
 * the API's shape (the service's answer, or `rendered`), so the events carry what a read sends.
 *
 * A call made inside a caller's transaction (params.transaction) adds its events to that one.
 * Otherwise a transaction is opened only when the request carries an Idempotency-Key or an
 * active subscription wants the event; every other write runs as before. Its Feathers events
 * wait for the commit (deferred events).
 *
 * With `checksInWrite`, "nobody subscribed" is a guard of the write's own statement instead of a
 * query before it. When a guard of the statement fails, the service throws WriteGuardsFailed:
 * this hook runs every guard's full check (whose error the caller gets), then opens the
 * transaction and writes once more there, with the events.
 */
export const writeTransaction = (path: string, { alsoChanges = {}, checksInWrite = false, inTransaction: always = [], reads = [] }: WriteTransactionOptions = {}) =>
  async (context: HookContext, next: NextFunction) => {
    if (READS.has(context.method) || reads.includes(context.method)) return next()
    const types = [...eventTypesOf(path, context.method), ...(alsoChanges[context.method] ?? [])]
    const outer: Knex.Transaction | undefined = context.params.transaction?.trx
    if (outer) {
      const at = context.params.pendingEvents?.length
      await runInside(outer, context, next, path)
      // Its events wait for the caller's commit too (when the caller collects them).
      return deferEvent(context, at)
    }
    const knex = context.app.get('knex')
    const claimed = context.params.idempotency
    const storesAnswer = Boolean(claimed && !claimed.stored && context.params.provider)
    const organizations = organizationsOf(context)
    // "Anyone subscribed?" is asked first only of the one organization the call acts in. A call
    // that may touch several (a member of two organizations patching by id) or names none (an
    // invitation accepted by its token) goes into the transaction unasked: on Citus the question
    // would read several shards, and in the transaction its events find their subscribers by their
    // records' organization.
    if (!storesAnswer && !always.includes(context.method) && organizations?.length === 1) {
      if (checksInWrite && types.length > 0 && guardWrite(context, { holds: nobodySubscribed(types, organizations), check: async () => undefined })) {
        return writeOnceChecked(context, next, path)
      }
      if (!(await hasSubscribers(knex, types, organizations))) return next()
    }
    await inTransaction(knex, (inside) => runInTransaction(inside, context, () => runInside(inside.transaction.trx, context, next, path)))
  }

/**
 * A single write whose statement holds its checks: one statement when they hold. When one does
 * not, its full check throws the caller's error; when all hold after all (somebody subscribed,
 * a reference or a definition changed meanwhile), the write runs again in a transaction, alone.
 */
async function writeOnceChecked(context: HookContext, next: NextFunction, path: string) {
  try {
    return await next()
  } catch (error) {
    if (!(error instanceof WriteGuardsFailed)) throw error
    await checkGuards(error.guards)
  }
  context.params.writeGuards?.delete(context.service)
  await inTransaction(context.app.get('knex'), (inside) => runInTransaction(inside, context, async () => {
    const trx = inside.transaction.trx
    const before = await beforeWrite(trx, context, path)
    context.result = await writeAgain(context)
    await afterWrite(trx, context, before, path)
  }))
}

/** The service's own write of this call, once more, in the call's transaction: its hooks have run. */
const writeAgain = (context: HookContext) =>
  context.method === 'create'
    ? (context.self as any)._create(context.data, context.params)
    : (context.self as any)._patch(context.id, context.data, context.params)

/** Runs fn with the transaction in the call's params, its events deferred to the commit. */
async function runInTransaction(inside: TransactionParams, context: HookContext, fn: () => Promise<void>) {
  Object.assign(context.params, inside)
  try {
    await fn()
    await deferEvent(context, 0)
  } finally {
    delete context.params.transaction
    delete context.params.pendingEvents
  }
}

/** The batch methods (docs/bulk-and-sync.md) and the methods whose events their records have. */
const BATCH_METHODS: Record<string, string[]> = { upsert: ['create', 'patch'], 'batch-update': ['patch'], 'batch-delete': ['remove'] }
const METHOD_OF_EVENT = { created: 'create', patched: 'patch', removed: 'remove' } as const

/** The event types a call of this method may cause. */
const eventTypesOf = (path: string, method: string) =>
  (BATCH_METHODS[method] ?? [method]).map((m) => eventTypeOf(path, m)).filter((type): type is string => Boolean(type))

/** The write and what goes with it in its transaction, which is open already. A guard that fails there is checked and the write run again. */
async function runInside(trx: Knex.Transaction, context: HookContext, next: NextFunction, path: string) {
  const before = await beforeWrite(trx, context, path)
  try {
    await next()
  } catch (error) {
    if (!(error instanceof WriteGuardsFailed)) throw error
    await checkGuards(error.guards)
    context.params.writeGuards?.delete(context.service)
    context.result = await writeAgain(context)
  }
  await afterWrite(trx, context, before, path)
}

/**
 * Before the write, in its transaction: the record a patch with an event is about to change, as
 * a read by id sends it (for the event's previous attributes), and the list of what the call
 * changes besides (shared by reference: calls inside this one, with params copied, add to it).
 */
async function beforeWrite(trx: Knex.Transaction, context: HookContext, path: string) {
  context.params.alsoChanged ??= []
  const patchesOne = context.method === 'patch' && context.id !== null && context.id !== undefined
  return patchesOne && eventTypeOf(path, context.method) ? currentRecord(trx, context) : undefined
}

/** After the write, in its transaction: its events, those of what it changed besides, its stored answer. */
async function afterWrite(trx: Knex.Transaction, context: HookContext, before: Record<string, any> | undefined, path: string) {
  const type = eventTypeOf(path, context.method)
  const alsoChanged = context.params.alsoChanged ?? []
  let enqueued = 0
  if (type) enqueued += await enqueueEvents(trx, type, changedRecords(context, before), secretsOf(context, path))
  if (context.params.batchEvents) enqueued += await enqueueBatchEvents(trx, context, path)
  enqueued += await enqueueAlsoChanged(trx, alsoChanged.splice(0), context)
  if (enqueued) context.app.get('outbox').kickAfterCommit(trx)
  await storeAnswerOfCall(trx, context)
}

/**
 * The events of the records a call changed besides its answer's, in the order they changed: a
 * run of changes with one event type costs one subscriber check, and the records are enqueued
 * together only when somebody subscribed (a bulk update of 500 activities is not 500 queries).
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
    if (!type) continue
    const organizations = [...new Set(run.map(({ record }) => record.organization_id).filter((id) => typeof id === 'number'))]
    if (!(await hasSubscribers(trx, [type], organizations))) continue
    enqueued += await enqueueEvents(trx, type, run.map(({ record }) => ({ object: record })), secretsOf(context, path))
  }
  return enqueued
}

/**
 * The events of a batch custom method, one per record like single writes, in the order of its
 * answer: consecutive records with the same event are enqueued together.
 */
async function enqueueBatchEvents(trx: Knex.Transaction, context: HookContext, path: string) {
  const events = context.params.batchEvents!
  const result = context.result as any
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

/**
 * The organizations the call may touch: the one it names (tenant scope refuses a caller who may
 * not act there), else the caller's (null: unknown, a system call naming none).
 */
function organizationsOf(context: HookContext): number[] | null {
  // Before tenant scope has run, a query's organization_id is still the text of the URL.
  const named = context.params.query?.organization_id ?? (context.data as any)?.organization_id
  const organizationId = typeof named === 'string' && /^[1-9][0-9]{0,9}$/.test(named) ? Number(named) : named
  if (Number.isSafeInteger(organizationId)) return [organizationId]
  const { caller } = context.params
  return caller ? accessibleOrganizations(caller) : null
}

/** The secret fields of a resource's records, which its events leave out. */
const secretsOf = (context: HookContext, path: string) => secretFieldsOf(context.app.service(path as any))

/**
 * The record a patch is about to change, as a read by id sends it, within the organizations the
 * call may touch (on Citus, a read of one organization's shard rather than of every shard). None
 * for a malformed id, which the query validation refuses before any SQL; a failed read is the
 * call's error, never swallowed: its statement has aborted the transaction, and every later one
 * would fail.
 */
async function currentRecord(trx: Knex.Transaction, context: HookContext): Promise<Record<string, any> | undefined> {
  if (!isRecordId(context.id)) return undefined
  const organizations = organizationsOf(context)
  const query = organizations ? { organization_id: { $in: organizations } } : {}
  return (context.self as any)._get(context.id, { transaction: { trx }, query }).catch((error: any) => {
    if (error?.code === 404) return undefined
    throw error
  })
}

/** The records the call answered with, with the old values of what a patch changed. */
function changedRecords(context: HookContext, before: Record<string, any> | undefined): ChangedRecord[] {
  const sent = context.result
  const objects: Record<string, any>[] = (Array.isArray(sent) ? sent : [sent]).filter((record) => record && typeof record === 'object')
  if (!before) return objects.map((object) => ({ object }))
  return objects.map((object) => ({ object, previous: object.id === before.id ? previousAttributes(before, object) : undefined }))
}
