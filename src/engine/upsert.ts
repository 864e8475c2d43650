import { BadRequest } from '@feathersjs/errors'
import type { Knex } from 'knex'

/**
 * How a batch upsert recognises a record: SQL over a sent key (the SQL expression `k`), so that
 * the match, the per-key lock and the check for keys repeated in a batch agree whatever the
 * case or spelling of the key.
 */
export interface UpsertKey {
  /** The condition on a stored row (alias t) matching key k, served by an index: e.g. lower(t.email) = lower(k). */
  matches: (k: string) => string
  /** The normalized key, e.g. lower(k): what is locked, and compared within a batch. */
  sent: (k: string) => string
  /** The key of a record about to be written (its prepared row); null or undefined: it has none. */
  value: (row: Record<string, any>) => string | null | undefined
  /** The body field the key comes from, where an error about it is reported. */
  field: string
}

/** One record of a batch upsert: the row to write, and the columns the client set (the others stay on a match). */
export interface UpsertRecord {
  row: Record<string, any>
  sent: string[]
}

/** A key of one record repeats the key of an earlier record of the same batch. */
export class RepeatedKeys extends BadRequest {
  constructor(errors: Record<string, Record<string, string>>) {
    super('Invalid records', { errors })
  }
}

/** Columns an upsert never changes on a record it matches. */
const KEPT_ON_MATCH = new Set(['id', 'organization_id', 'created_by_user_id', 'created_at', 'updated_at', 'deleted_at'])

/** A stored value written back as it is: json(b) values go back as JSON text. */
const storedValue = (value: unknown) =>
  value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value

/**
 * The batch upsert, in the transaction `trx` and three statements whatever the number of
 * records: a transaction-level advisory lock on every key (sorted, so concurrent batches queue
 * instead of deadlocking), the match of every key against the live records (locked FOR UPDATE),
 * and one INSERT ... ON CONFLICT (organization_id, id) DO UPDATE where a matched record carries
 * its id, its rows answered through `written` (as the API sends them). A concurrent upsert of
 * the same key waits for the lock and then sees this one's record, so one key never makes two
 * records. Answers the records in input order and whether each was created.
 */
export async function upsertRows(
  trx: Knex.Transaction,
  table: string,
  keys: Record<string, UpsertKey>,
  keyName: string,
  records: UpsertRecord[],
  written: (write: Knex.Raw) => Promise<Record<string, any>[]>
) {
  const { key, values, organizationId } = keysOf(table, keys, keyName, records)
  await trx.raw(
    `SELECT pg_advisory_xact_lock(hashtextextended(? || s.k, 0)) FROM (SELECT DISTINCT ${key.sent('i.k')} AS k FROM unnest(?::text[]) AS i(k) ORDER BY 1) AS s`,
    [`${table}:${keyName}:${organizationId}:`, values]
  )
  const matches = await matchesOf(trx, table, key, values, organizationId, 'FOR UPDATE')
  refuseRepeatedKeys(matches.map((match: any) => match.batch_key), key.field)
  const columns = [...new Set(records.flatMap(({ row }) => Object.keys(row)))].filter((column) => column !== 'id')
  const rows = records.map(({ row, sent }, index) => {
    const stored = matches[index].id === null ? undefined : matches[index]
    return stored ? mergedWithStored(row, sent, stored, columns) : row
  })
  // now() in the rows rather than in DO UPDATE SET, which Citus allows immutable functions only in.
  const insert = trx(table).insert(rows.map((row) => ({ ...row, updated_at: trx.fn.now() }))).toSQL()
  const changed = columns.filter((column) => !KEPT_ON_MATCH.has(column))
  const answered = await written(trx.raw(
    `${insert.sql} ON CONFLICT (organization_id, id) DO UPDATE SET ${changed.map(() => '?? = EXCLUDED.??').join(', ')}${changed.length ? ', ' : ''}updated_at = EXCLUDED.updated_at RETURNING *`,
    [...insert.bindings, ...changed.flatMap((column) => [column, column])]
  ))
  return inInputOrder(answered, matches.map((match: any) => match.id))
}

/** The key an upsert matches by and each record's value of it; a record without one is a 400 keyed by its index. */
function keysOf(table: string, keys: Record<string, UpsertKey>, keyName: string, records: UpsertRecord[]) {
  const key = keys[keyName]
  if (!key) throw new BadRequest('Validation failed', { errors: { idProperty: `must be one of: ${Object.keys(keys).join(', ')}` } })
  const organizationId = records[0].row.organization_id
  const values = records.map(({ row }) => key.value(row)) as string[]
  const missing: Record<string, Record<string, string>> = {}
  values.forEach((value, index) => {
    if (value === null || value === undefined || value === '') missing[index] = { [key.field]: `is required to upsert by ${keyName}` }
  })
  if (Object.keys(missing).length) throw new BadRequest('Invalid records', { errors: missing })
  return { key, values, organizationId }
}

/** Every key matched against the live records of the organization, in input order: the oldest record with it, or a row of nulls. */
async function matchesOf(db: Knex, table: string, key: UpsertKey, values: string[], organizationId: number, lock: 'FOR UPDATE' | '') {
  const { rows } = await db.raw(
    `SELECT i.ord AS batch_ord, ${key.sent('i.k')} AS batch_key, m.* FROM unnest(?::text[]) WITH ORDINALITY AS i(k, ord)
     LEFT JOIN LATERAL (
       SELECT * FROM ?? AS t WHERE t.organization_id = ? AND t.deleted_at IS NULL AND ${key.matches('i.k')}
       ORDER BY t.id LIMIT 1 ${lock}
     ) AS m ON true ORDER BY i.ord`,
    [values, table, organizationId]
  )
  return rows as Record<string, any>[]
}

/**
 * What an upsert would do, without writing or locking (an import's preview): the id of the
 * record each record matches, or null for one it would create; the same 400s as the upsert.
 */
export async function matchRows(db: Knex, table: string, keys: Record<string, UpsertKey>, keyName: string, records: UpsertRecord[]): Promise<(number | null)[]> {
  const { key, values, organizationId } = keysOf(table, keys, keyName, records)
  const matches = await matchesOf(db, table, key, values, organizationId, '')
  refuseRepeatedKeys(matches.map((match) => match.batch_key), key.field)
  return matches.map((match) => (match.id === null ? null : Number(match.id)))
}

/** Two records of one batch with the same key would write one record twice: a 400 naming the later one. */
function refuseRepeatedKeys(keys: (string | null)[], field: string) {
  const first = new Map<string, number>()
  const errors: Record<string, Record<string, string>> = {}
  keys.forEach((key, index) => {
    if (key === null) return
    if (first.has(key)) errors[index] = { [field]: `is the same key as record ${first.get(key)}'s` }
    else first.set(key, index)
  })
  if (Object.keys(errors).length) throw new RepeatedKeys(errors)
}

/** A matched record's row: the columns the client sent, the stored values elsewhere, custom fields merged. */
function mergedWithStored(row: Record<string, any>, sent: string[], stored: Record<string, any>, columns: string[]) {
  const merged: Record<string, unknown> = { id: stored.id, organization_id: stored.organization_id }
  for (const column of columns) {
    if (column === 'organization_id') continue
    merged[column] = sent.includes(column) ? row[column] : storedValue(stored[column])
  }
  if (sent.includes('custom_fields') && typeof row.custom_fields === 'string') {
    merged.custom_fields = JSON.stringify({ ...(stored.custom_fields ?? {}), ...JSON.parse(row.custom_fields) })
  }
  return merged
}

/** Written rows back in input order: a matched record by its id, the created ones in id (VALUES) order. */
function inInputOrder(written: Record<string, any>[], matchedIds: (number | null)[]) {
  const byId = new Map(written.map((row) => [Number(row.id), row]))
  const matched = new Set(matchedIds.filter((id) => id !== null).map(Number))
  const created = written.filter((row) => !matched.has(Number(row.id))).sort((a, b) => Number(a.id) - Number(b.id))
  let next = 0
  return matchedIds.map((id) => (id === null ? { row: created[next++], created: true } : { row: byId.get(Number(id))!, created: false }))
}
