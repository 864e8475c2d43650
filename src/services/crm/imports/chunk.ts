import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { shapeError } from '../../../hooks/errors.js'
import type { TransactionParams } from '../../../hooks/deferred-events.js'
import type { UpsertKey } from '../../../engine/upsert.js'
import type { CsvRow } from './csv-file.js'
import type { ImportedResource, RowRecord } from './mapping.js'
import { e164Of } from '../../../lib/phone-numbers.js'
import type { PhoneFields } from '../../../lib/phone-numbers.js'

/**
 * One chunk of an import's rows through the resource's own batch paths (docs/bulk-and-sync.md):
 * a batch create for rows without a key, an upsert per key for the others, so that validation,
 * references, custom fields, rules, events, webhooks and the batch budget apply as to a client's
 * batch. The companies the rows name are found in one query and the missing ones created in one
 * batch. A chunk of a preview runs the same calls as dry runs (params.dryRun): nothing is written.
 */

/** Rows per chunk: the largest batch the batch paths take. */
export const CHUNK_ROWS = 100

/** What a chunk is imported with: the resource, the keys in order of preference, the row reader and the importer's params. */
export interface ChunkPlan {
  app: Application
  resource: ImportedResource
  organizationId: number
  /** Upsert keys, in order: a row is matched by the first it has a value for; a row with none is created. */
  keys: string[]
  read: (cells: string[]) => RowRecord
  /** The importer's call params: caller, authenticated, the batch budget counted. */
  params: Params
}

export interface RowFailure {
  row: CsvRow
  errors: Record<string, string>
}

export interface ChunkOutcome {
  created: number
  updated: number
  failures: RowFailure[]
  /** Company names (lower case) the chunk created, or would create in a dry run. */
  companiesCreated: string[]
}

interface Pending {
  row: CsvRow
  body: Record<string, unknown>
  companyName?: string
  /** The key it is matched by (normalized as compared within the file), if any. */
  keyName?: string
  keyValue?: string
}

/** A key's value as the file is deduplicated by it (the database compares the same way: a phone by its E.164 form). */
function normalizedKey(keyName: string, value: unknown, body: Record<string, unknown>): string {
  const text = String(value).trim()
  if (keyName === 'email' || keyName === 'name') return text.toLowerCase()
  if (keyName === 'phone') return e164Of({ ...(body as PhoneFields), phone: text }) ?? text
  if (keyName === 'domain') return text.toLowerCase().replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^www\./, '').replace(/[/:?#].*$/, '')
  return text
}

/** A record's errors as one line of text. */
export const errorText = (errors: Record<string, string>) => Object.entries(errors).map(([field, message]) => `${field}: ${message}`).join('; ')

/**
 * Imports one chunk. `inside` is the chunk's transaction (a run); each batch call runs in a
 * savepoint of it, so that a refused call leaves the others' writes in place. A preview passes
 * none, and `seen`: the keys met earlier in the file, whose rows update a record the file made.
 */
export async function importChunk(plan: ChunkPlan, rows: CsvRow[], inside?: TransactionParams, seen?: Set<string>): Promise<ChunkOutcome> {
  const outcome: ChunkOutcome = { created: 0, updated: 0, failures: [], companiesCreated: [] }
  const service = plan.app.service(plan.resource) as any
  const upsertKeys: Record<string, UpsertKey> = service.options.upsertKeys ?? {}
  let pending: Pending[] = rows.map((row) => ({ row, ...plan.read(row.cells) }))
  pending = await withCompanies(plan, pending, outcome, inside)
  for (const record of pending) {
    const keyName = plan.keys.find((name) => hasValue(record.body[upsertKeys[name].field]))
    if (keyName) Object.assign(record, { keyName, keyValue: `${keyName}:${normalizedKey(keyName, record.body[upsertKeys[keyName].field], record.body)}` })
  }
  for (const keyName of [...plan.keys, undefined]) {
    for (const round of rounds(pending.filter((record) => record.keyName === keyName))) {
      await writeRound(plan, service, keyName, round, outcome, inside, seen)
    }
  }
  return outcome
}

const hasValue = (value: unknown) => value !== undefined && value !== null && value !== ''

/** Rows sharing a key go in successive rounds (the second updates what the first wrote), each key once per round. */
function rounds(records: Pending[]): Pending[][] {
  const result: Pending[][] = []
  const roundOf = new Map<string, number>()
  for (const record of records) {
    const index = record.keyValue === undefined ? 0 : (roundOf.get(record.keyValue) ?? -1) + 1
    if (record.keyValue !== undefined) roundOf.set(record.keyValue, index)
    ;(result[index] ??= []).push(record)
  }
  return result.filter(Boolean)
}

/** Runs one call of the importer, in a savepoint of the chunk's transaction when there is one; a refused call leaves no event behind. */
async function call(plan: ChunkPlan, inside: TransactionParams | undefined, run: (params: Params) => Promise<any>): Promise<any> {
  if (!inside) return run({ ...plan.params, dryRun: true })
  const events = inside.pendingEvents.length
  try {
    return await inside.transaction.trx.transaction((savepoint: Knex.Transaction) =>
      run({ ...plan.params, transaction: { trx: savepoint }, pendingEvents: inside.pendingEvents } as Params))
  } catch (error) {
    inside.pendingEvents.length = events
    throw error
  }
}

/**
 * The refusal of a batch call, per record: a 400 keyed by index names each refused record; any
 * other refusal (a 409 on a unique key) is not keyed, and the records are then tried one by one.
 * A 429 (the batch budget), a 5xx or anything else stops the chunk.
 */
function refusalOf(error: unknown, size: number): { byIndex?: Record<string, Record<string, string>>; whole?: Record<string, string> } {
  const shaped = shapeError(error)
  if (shaped.code === 429 || shaped.code >= 500 || shaped.code < 400) throw error
  const errors = (shaped as any).errors as Record<string, any> | undefined
  const keyed = errors && Object.keys(errors).length > 0 && Object.keys(errors).every((key) => /^\d+$/.test(key) && Number(key) < size)
  if (keyed) return { byIndex: errors }
  const fields = errors && Object.keys(errors).length ? Object.fromEntries(Object.entries(errors).map(([field, message]) => [field, String(message)])) : { row: shaped.message }
  return { whole: fields }
}

async function writeRound(
  plan: ChunkPlan, service: any, keyName: string | undefined, round: Pending[], outcome: ChunkOutcome, inside?: TransactionParams, seen?: Set<string>
) {
  let records = round
  while (records.length > 0) {
    try {
      const bodies = records.map((record) => record.body)
      if (keyName) {
        const answer = await call(plan, inside, (params) => service.upsert({ organization_id: plan.organizationId, idProperty: keyName, records: bodies }, params))
        if (inside) {
          outcome.created += answer.created
          outcome.updated += answer.updated
        } else {
          answer.data.forEach(({ id }: { id: number | null }, index: number) => countPreviewed(outcome, seen, records[index].keyValue, id !== null))
        }
      } else {
        const answer = await call(plan, inside, (params) => service.create(bodies, params))
        outcome.created += inside ? answer.length : records.length
      }
      return
    } catch (error) {
      const refusal = refusalOf(error, records.length)
      if (refusal.byIndex) {
        const refused = new Set(Object.keys(refusal.byIndex).map(Number))
        for (const index of refused) outcome.failures.push({ row: records[index].row, errors: refusal.byIndex[index] })
        records = records.filter((_record, index) => !refused.has(index))
      } else if (records.length === 1) {
        outcome.failures.push({ row: records[0].row, errors: refusal.whole! })
        return
      } else {
        for (const record of records) await writeRound(plan, service, keyName, [record], outcome, inside, seen)
        return
      }
    }
  }
}

/** A preview's count of one row: an update when its key matches a stored record or an earlier row of the file. */
function countPreviewed(outcome: ChunkOutcome, seen: Set<string> | undefined, keyValue: string | undefined, matched: boolean) {
  const earlier = keyValue !== undefined && seen?.has(keyValue)
  if (matched || earlier) outcome.updated += 1
  else outcome.created += 1
  if (keyValue !== undefined) seen?.add(keyValue)
}

/**
 * The companies the rows name, found by name (any case) in one query; the missing ones created
 * in one batch of the companies service (or, in a dry run, counted). Rows whose company could not
 * be created fail with its error.
 */
async function withCompanies(plan: ChunkPlan, pending: Pending[], outcome: ChunkOutcome, inside?: TransactionParams): Promise<Pending[]> {
  const named = pending.filter((record) => record.companyName !== undefined)
  if (named.length === 0) return pending
  const db: Knex = inside?.transaction.trx ?? plan.app.get('knex')
  // A company is created with the name as its first row spells it.
  const spelled = new Map<string, string>()
  for (const record of named) if (!spelled.has(record.companyName!.toLowerCase())) spelled.set(record.companyName!.toLowerCase(), record.companyName!)
  const wanted = [...spelled.entries()]
  const found = await db('companies').where({ organization_id: plan.organizationId }).whereNull('deleted_at')
    .whereRaw('lower(name) = ANY(?::text[])', [wanted.map(([key]) => key)]).orderBy('id').select('id', db.raw('lower(name) AS key'))
  const ids = new Map<string, number>()
  for (const { id, key } of found as { id: number; key: string }[]) if (!ids.has(key)) ids.set(key, id)
  const missing = wanted.filter(([key]) => !ids.has(key))
  const refused = new Map<string, Record<string, string>>()
  const create = async (companies: [string, string][]) => {
    const created = await call(plan, inside, (params) => (plan.app.service('companies') as any).create(companies.map(([, name]) => ({ name })), params)) as any[]
    created.forEach((company, index) => ids.set(companies[index][0], company.id))
    outcome.companiesCreated.push(...companies.map(([key]) => key))
  }
  if (missing.length > 0 && !inside) outcome.companiesCreated.push(...missing.map(([key]) => key))
  else if (missing.length > 0) {
    try {
      await create(missing)
    } catch (error) {
      const refusal = refusalOf(error, missing.length)
      const refusedAt = new Set(refusal.byIndex ? Object.keys(refusal.byIndex).map(Number) : missing.keys())
      missing.forEach(([key], index) => {
        if (refusedAt.has(index)) refused.set(key, prefixed(refusal.byIndex?.[index] ?? refusal.whole!))
      })
      const rest = missing.filter((_company, index) => !refusedAt.has(index))
      if (rest.length) await create(rest)
    }
  }
  return pending.filter((record) => {
    if (record.companyName === undefined) return true
    const key = record.companyName.toLowerCase()
    const errors = refused.get(key)
    if (errors) {
      outcome.failures.push({ row: record.row, errors })
      return false
    }
    const id = ids.get(key)
    if (id !== undefined) record.body.company_id = id
    return true
  })
}

/** A company's errors as the row's: under company_name. */
const prefixed = (errors: Record<string, string>) =>
  Object.fromEntries(Object.entries(errors).map(([field, message]) => [field === 'name' ? 'company_name' : `company_name.${field}`, message]))
