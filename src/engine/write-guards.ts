import type { Knex } from 'knex'
import type { Params } from '@feathersjs/feathers'
import { preparedRows } from '../db.js'
import type { HookContext } from '../declarations.js'
import { columnsOf, quote } from './catalog.js'

/**
 * A check a single write makes inside its own statement instead of in a query before it: the
 * INSERT or UPDATE writes only where every guard holds. When one does not, the guards' `explain`
 * runs the full check, which throws the error the caller should see. The common call, where every
 * check passes, costs no round trip of its own.
 */
export interface WriteGuard {
  /** An SQL condition: true when the write may go ahead. */
  holds: Condition
  /**
   * The full check: throws the error of a guard that does not hold, returns when it holds after
   * all; or returns params the write must run with to go ahead (a transaction it opened).
   */
  explain: () => Promise<void | Partial<Params>>
}

/**
 * SQL text with a `?` for each binding. Guards are written as text, not as knex builders: every
 * single write carries them, and knex formatting nested builders cost more CPU than the rest of
 * the write's statement.
 */
export interface Condition {
  sql: string
  bindings: Knex.RawBinding[]
}

/** The conditions joined into one, true when all of them are. */
export const allOf = (conditions: Condition[]): Condition => ({
  sql: conditions.map((condition) => `(${condition.sql})`).join(' AND '),
  bindings: conditions.flatMap((condition) => condition.bindings)
})

/** A service whose single creates and patches take the guards of their calls (RecordService). */
export interface GuardedWriter {
  readonly guardsWrites: boolean
}

declare module '@feathersjs/feathers' {
  interface Params {
    /**
     * Checks a service's write statement makes itself, by the service they were made for (a call
     * made with a copy of these params for another service keeps its own).
     */
    writeGuards?: Map<unknown, WriteGuard[]>
  }
}

const isGuardedWriter = (service: unknown): service is GuardedWriter => (service as Partial<GuardedWriter> | undefined)?.guardsWrites === true

/**
 * Hands a check to the write statement of this call, when its service makes single writes with
 * guards: true when it took the guard, false when the hook must check by itself.
 */
export function guardWrite(context: HookContext, guard: WriteGuard): boolean {
  const single = (context.method === 'create' && !Array.isArray(context.data)) || (context.method === 'patch' && context.id !== null && context.id !== undefined)
  if (!single || !isGuardedWriter(context.service)) return false
  const guards = (context.params.writeGuards ??= new Map())
  guards.set(context.service, [...(guards.get(context.service) ?? []), guard])
  return true
}

/** The guards a write of `service` must hold: taken, so that they apply to this write only. */
export function takeGuards(service: unknown, params: { writeGuards?: Map<unknown, WriteGuard[]> }): WriteGuard[] {
  const guards = params.writeGuards?.get(service) ?? []
  params.writeGuards?.delete(service)
  return guards
}

/** The guards joined into one condition, for a statement's WHERE. */
export const allHold = (guards: WriteGuard[]): Condition => allOf(guards.map((guard) => guard.holds))

/**
 * After a guarded write wrote nothing: throws the error of the guard that failed, if one did;
 * else gives the params its write must run again with (the service's params may be a copy).
 */
export async function explainGuards(guards: WriteGuard[]): Promise<Partial<Params>> {
  const runWith: Partial<Params> = {}
  for (const guard of guards) Object.assign(runWith, await guard.explain())
  return runWith
}

const isRaw = (value: unknown) => typeof value === 'object' && value !== null && (value as { isRawInstance?: boolean }).isRawInstance === true

/**
 * INSERT … SELECT <the values> WHERE <every guard holds>: the row, or undefined when a guard
 * did not hold. The values are cast to their columns' types, which a SELECT list does not infer.
 * A named statement (its text depends on the body's columns only), returning the catalogued
 * columns by name: a column added while it is kept would otherwise fail it.
 */
export async function insertWhereGuardsHold<Row>(knex: Knex, db: Knex, table: string, data: Record<string, unknown>, guards: WriteGuard[]) {
  const catalogued = await columnsOf(knex, table, db)
  const types = new Map(catalogued.map((column) => [column.name, column.type]))
  const columns = Object.keys(data).filter((column) => data[column] !== undefined)
  const values = columns.map((column) => {
    const type = types.get(column)
    return isRaw(data[column]) || !type ? '?' : `?::${quote(type)}`
  })
  const condition = allHold(guards)
  const sql = `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) SELECT ${values.join(', ')} WHERE ${condition.sql} RETURNING ${catalogued.map((column) => quote(column.name)).join(', ')}`
  const bindings = [...columns.map((column) => data[column]), ...condition.bindings] as Knex.RawBinding[]
  const raw = db.raw(sql, bindings)
  // Every `?` is a binding of ours: numbered here, unless a value is SQL of its own (knex writes it).
  let position = 0
  const native = bindings.some(isRaw) ? undefined : { sql: sql.replace(/\?/g, () => `$${++position}`), bindings }
  const rows = await preparedRows<Row>(db, { raw, native })
  return rows[0] as Row | undefined
}
