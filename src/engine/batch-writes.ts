import { BadRequest } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Resolver, Validator } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { TObject } from '@feathersjs/typebox'
import type { HookContext, NextFunction } from '../declarations.js'
import { shapeError } from '../hooks/errors.js'
import { referenceErrors } from '../hooks/references.js'
import type { ErrorsByIndex, Reference } from '../hooks/references.js'
import { countBatchRecords } from '../rate-limit/batch-records.js'
import { RecordId } from '../schemas.js'
import { dataValidator, getValidator } from '../validators.js'
import type { UpsertKey, UpsertRecord } from './record-service.js'

type Hook = (context: HookContext<any>) => Promise<unknown> | unknown

/**
 * Batch writes of a tenant resource (docs/bulk-and-sync.md): POST /<path> with an array creates
 * 1..100 records; X-Service-Method upsert, batch-update and batch-delete match, change and delete
 * 1..100 records. Each is all or nothing. Each record goes through the resource's own chain
 * (validation, rules, custom fields, data resolver) as a single write would, while what can be
 * read for all records at once is: references in one query, custom field definitions once, the
 * stored records of an update in one query. A record's 400 is reported under its index,
 * errors["3"].email, together with every other invalid record's.
 */
export const BATCH_METHODS = ['upsert', 'batch-update', 'batch-delete'] as const
export type BatchMethod = (typeof BATCH_METHODS)[number]
export const MAX_BATCH_RECORDS = 100

/** Upsert by the client's own id of a record (external_id, unique per organization among live records). */
export const byExternalId: UpsertKey = { matches: (k) => `t.external_id = ${k}`, sent: (k) => k, value: (row) => row.external_id, field: 'external_id' }

/** What a resource declares to take batches: the keys its upsert matches records by. */
export interface BatchDeclaration {
  upsertKeys: Record<string, UpsertKey>
}

/** The parts of a resource's write chain a batch runs per record (see tenantResource). */
export interface WriteChains {
  validators: { data?: Validator; patch?: Validator }
  references?: Record<string, Reference>
  rules: { create?: Hook[]; patch?: Hook[] }
  customFields?: Hook
  resolvers: { data?: Resolver<any, HookContext>; patch?: Resolver<any, HookContext> }
  after: { create?: Hook[]; patch?: Hook[]; remove?: Hook[] }
}

/** Bodies of the batch methods. The records themselves are validated one by one, so that errors carry their index. */
export function batchValidators(declaration: BatchDeclaration) {
  const idProperty = Type.Unsafe<string>({ type: 'string', enum: Object.keys(declaration.upsertKeys) })
  const organization_id = Type.Optional(RecordId)
  const anyRecord = Type.Object({}, { additionalProperties: true })
  return {
    upsert: getValidator(Type.Object({ organization_id, idProperty, records: batchOf(anyRecord) }, { additionalProperties: false }), dataValidator),
    'batch-update': getValidator(
      Type.Object({ organization_id, records: batchOf(Type.Object({ id: RecordId }, { additionalProperties: true })) }, { additionalProperties: false }),
      dataValidator
    ),
    'batch-delete': getValidator(
      Type.Object({ organization_id, ids: Type.Array(RecordId, { minItems: 1, maxItems: MAX_BATCH_RECORDS, uniqueItems: true }) }, { additionalProperties: false }),
      dataValidator
    )
  }
}

/** 1..MAX_BATCH_RECORDS items. */
export const batchOf = (items: TObject) => Type.Array(items, { minItems: 1, maxItems: MAX_BATCH_RECORDS })

declare module '@feathersjs/feathers' {
  interface Params {
    /** The events of a batch custom method's records, in the order of its answer (emitted by emitBatchEvents). */
    batchEvents?: ('created' | 'patched' | 'removed')[]
  }
}

/**
 * The roles of the batch methods follow the methods they stand for: upsert needs the roles of
 * both create and patch, batch-update those of patch, batch-delete those of remove.
 */
export function batchRoles<R>(roles: Partial<Record<string, R[]>> | undefined): Partial<Record<string, R[]>> | undefined {
  if (!roles) return roles
  const of = (method: string) => roles[method] ?? roles.all
  const create = of('create')
  const patch = of('patch')
  const both = create && patch ? create.filter((role) => patch.includes(role)) : create ?? patch
  return { ...roles, upsert: both, 'batch-update': patch, 'batch-delete': of('remove') }
}

/** A batch has 1..100 records. */
export function checkSize(count: number) {
  if (count < 1 || count > MAX_BATCH_RECORDS) {
    throw new BadRequest('Validation failed', { errors: { body: `must hold 1 to ${MAX_BATCH_RECORDS} records` } })
  }
}

/**
 * The hook context one record of a batch is checked in: the batch's app, service and params,
 * with this record's method, data and id. A plain object: a Feathers context keeps data and id
 * in its arguments, which every record would share.
 */
function recordContext(context: HookContext, method: 'create' | 'patch', data: unknown, id: number | null = null): HookContext {
  const { app, service, self, path, params, http } = context
  return { app, service, self, path, params, http, type: 'before', method, data, id } as unknown as HookContext
}

/** Runs hooks over one record; a 400 becomes that record's errors, anything else stops the batch. */
async function checkRecord(index: number, errors: ErrorsByIndex, run: () => Promise<void>) {
  try {
    await run()
    return true
  } catch (error) {
    const shaped = shapeError(error)
    if (shaped.code !== 400) throw shaped
    errors[index] = { ...((shaped as any).errors ?? {}) }
    if (Object.keys(errors[index]).length === 0) errors[index].body = shaped.message
    return false
  }
}

const throwIfAny = (errors: ErrorsByIndex) => {
  if (Object.keys(errors).length) throw new BadRequest('Invalid records', { errors })
}

const runAll = async (hooks: Hook[], context: HookContext) => {
  for (const hook of hooks) await hook(context)
}

interface Prepared {
  rows: Record<string, any>[]
  /** Per record: the columns set before the data resolver, i.e. by the client and the resource's rules. */
  sent: string[][]
}

/**
 * The resource's write chain over every record of a batch: validation of each, the references of
 * all in one query, then per record the rules, custom fields and data resolver. `stored` gives an
 * update's records as stored (what loadBefore answers inside the chain).
 */
async function prepareRecords(
  context: HookContext,
  chains: WriteChains,
  method: 'create' | 'patch',
  input: Record<string, unknown>[],
  organizationId: number,
  stored?: Record<string, any>[]
): Promise<Prepared> {
  const errors: ErrorsByIndex = {}
  const validator = method === 'create' ? chains.validators.data : chains.validators.patch
  const copy = (data: unknown) => (data && typeof data === 'object' && !Array.isArray(data) ? { ...data } : data)
  const contexts = input.map((data, index) => recordContext(context, method, copy(data), stored ? stored[index].id : null))
  const valid = await Promise.all(contexts.map((sub, index) => checkRecord(index, errors, async () => {
    if (validator) await schemaHooks.validateData(validator)(sub)
    if (method === 'create') (sub.data as Record<string, unknown>).organization_id = organizationId
  })))
  if (chains.references) {
    const checked = contexts.filter((_sub, index) => valid[index])
    const found = await referenceErrors(context, chains.references, organizationId, checked.map((sub) => sub.data as Record<string, unknown>))
    checked.forEach((sub, position) => {
      if (!found[position]) return
      const index = contexts.indexOf(sub)
      errors[index] = found[position]
      valid[index] = false
    })
  }
  const rules = (method === 'create' ? chains.rules.create : chains.rules.patch) ?? []
  const resolver = method === 'create' ? chains.resolvers.data : chains.resolvers.patch
  const sent: string[][] = []
  // One record at a time: the chain's hooks read the stored record from the shared params.
  for (const [index, sub] of contexts.entries()) {
    if (!valid[index]) continue
    if (stored) context.params.before = stored[index]
    await checkRecord(index, errors, async () => {
      await runAll([...rules, ...(chains.customFields ? [chains.customFields] : [])], sub)
      sent[index] = Object.keys(sub.data as object).filter((key) => key !== 'organization_id')
      if (resolver) await schemaHooks.resolveData(resolver)(sub)
    })
  }
  delete context.params.before
  throwIfAny(errors)
  return { rows: contexts.map((sub) => sub.data as Record<string, any>), sent }
}

/** Runs the resource's after rules of a method over each written record, as for a single write. */
async function afterEach(context: HookContext, hooks: Hook[] | undefined, method: 'create' | 'patch', results: Record<string, any>[], inputs: unknown[]) {
  if (!hooks?.length) return
  for (const [index, result] of results.entries()) {
    const sub = Object.assign(recordContext(context, method, inputs[index], method === 'patch' ? result.id : null), { result })
    await runAll(hooks, sub)
  }
}

/** The hooks of the batch methods of one resource, and of its create when the body is an array. */
export function batchHooks(chains: WriteChains, validators: ReturnType<typeof batchValidators>) {
  /** POST /<path> with an array: the records are prepared, then written by one INSERT (the service's _create). */
  const createMany: Hook = async (context) => {
    const input = context.data as Record<string, unknown>[]
    checkSize(input.length)
    const organizationId = (input.find((record) => record && typeof record === 'object') as any)?.organization_id
    if (organizationId === undefined) throw new BadRequest('Invalid records', { errors: { 0: { body: 'must be an object' } } })
    await countBatchRecords(context, organizationId, input.length)
    context.data = (await prepareRecords(context, chains, 'create', input, organizationId)).rows
  }

  const afterCreateMany: Hook = async (context) => {
    if (Array.isArray(context.data)) await afterEach(context, chains.after.create, 'create', context.result as any[], context.data)
  }

  const upsert: Hook[] = [
    schemaHooks.validateData(validators.upsert),
    async (context) => {
      const { organization_id: organizationId, idProperty, records } = context.data as { organization_id: number; idProperty: string; records: Record<string, unknown>[] }
      checkSize(records.length)
      await countBatchRecords(context, organizationId, records.length)
      const { rows, sent } = await prepareRecords(context, chains, 'create', records, organizationId)
      context.data = { organization_id: organizationId, idProperty, records: rows.map((row, index): UpsertRecord => ({ row, sent: sent[index] })) }
      context.http = { ...context.http, status: 201 }
    }
  ]

  const batchUpdate: Hook[] = [
    schemaHooks.validateData(validators['batch-update']),
    async (context) => {
      const { organization_id: organizationId, records } = context.data as { organization_id: number; records: { id: number }[] }
      checkSize(records.length)
      refuseRepeatedIds(records.map((record) => record.id))
      await countBatchRecords(context, organizationId, records.length)
      const stored = await (context.service as any).liveRows(organizationId, records.map((record) => record.id), context.params)
      const changes = records.map(({ id: _id, ...change }) => change)
      const { rows } = await prepareRecords(context, chains, 'patch', changes, organizationId, stored)
      context.data = { organization_id: organizationId, records: rows.map((changes, index) => ({ id: records[index].id, changes })) }
    }
  ]

  const batchDelete: Hook[] = [
    schemaHooks.validateData(validators['batch-delete']),
    async (context) => {
      const { organization_id: organizationId, ids } = context.data as { organization_id: number; ids: number[] }
      await countBatchRecords(context, organizationId, ids.length)
    }
  ]

  return {
    createMany,
    afterCreateMany,
    before: { upsert, 'batch-update': batchUpdate, 'batch-delete': batchDelete } as Record<BatchMethod, Hook[]>,
    after: {
      'batch-update': [async (context: HookContext) => afterEach(context, chains.after.patch, 'patch', context.result as any[], (context.data as any).records.map((r: any) => r.changes))]
    } as Partial<Record<BatchMethod, Hook[]>>
  }
}

/** Two changes to one record in one batch-update: a 400 naming the later one. */
function refuseRepeatedIds(ids: number[]) {
  const errors: ErrorsByIndex = {}
  ids.forEach((id, index) => {
    const first = ids.indexOf(id)
    if (first !== index) errors[index] = { id: `is the same record as record ${first}'s` }
  })
  throwIfAny(errors)
}

/**
 * Around hook (outside the result resolvers) of the batch custom methods: each record written
 * emits its own service event, created, patched or removed, as a single write would, once the
 * batch is committed. A batch create needs none: Feathers emits one created event per record
 * (deferred like any single write's).
 */
export const emitBatchEvents = async (context: HookContext, next: NextFunction) => {
  await next()
  const events = context.params.batchEvents
  if (!events) return
  const result = context.result as any
  const records: Record<string, any>[] = Array.isArray(result) ? result : result.data
  const pending = context.params.pendingEvents
  records.forEach((record, index) => {
    // Inside a caller's transaction (inTransaction), they wait for its commit.
    if (pending) pending.push({ service: context.self as any, event: events[index], data: record, context })
    else (context.self as any).emit(events[index], record, context)
  })
}
