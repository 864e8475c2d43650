import type { Knex } from 'knex'
import type { HookContext } from '../declarations.js'
import { columnsOf, quote } from './catalog.js'
import { isCitus } from './citus.js'

/**
 * A check a single write makes inside its own statement instead of in a query before it: the
 * INSERT or UPDATE writes only where every guard holds, so the common write, where every check
 * passes, costs no round trip of its own. When the statement writes nothing, the service throws
 * WriteGuardsFailed; the write's hook (src/hooks/write-transaction.ts) then runs each guard's
 * `check`, which throws the error the caller should see, and writes once more in a transaction.
 */
export interface WriteGuard {
  /** An SQL condition: true when the write may go ahead. */
  holds: Condition
  /** The full check: throws the error of a guard that does not hold; returns when it holds after all. */
  check: () => Promise<void>
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

/** A guarded write wrote nothing: a guard did not hold, or there was nothing to write (a patch of no record). */
export class WriteGuardsFailed extends Error {
  constructor(readonly guards: WriteGuard[]) {
    super('A guarded write wrote nothing')
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

/** The guards a write of `service` must hold. */
export const guardsOf = (service: unknown, params: { writeGuards?: Map<unknown, WriteGuard[]> }): WriteGuard[] => params.writeGuards?.get(service) ?? []

/** The guards joined into one condition, for a statement's WHERE. */
export const allHold = (guards: WriteGuard[]): Condition => allOf(guards.map((guard) => guard.holds))

/** Runs every guard's full check: the first that does not hold throws its error. */
export async function checkGuards(guards: WriteGuard[]) {
  for (const guard of guards) await guard.check()
}

/**
 * INSERT … SELECT <the values> WHERE <every guard holds> RETURNING *: no row when a guard does
 * not hold. The values are cast to their columns' types, which a SELECT list does not infer.
 * (Wrapped: a knex Raw is a thenable, which an async function would run instead of returning.)
 * On Citus, which runs an INSERT … SELECT through the coordinator at several times the cost of
 * an INSERT … VALUES routed to the shard, the guards are read first (one single-shard read):
 * undefined when one does not hold, else the plain insert.
 */
export async function guardedInsert(knex: Knex, db: Knex, table: string, data: Record<string, unknown>, guards: WriteGuard[]): Promise<{ write: Knex.Raw | Knex.QueryBuilder } | undefined> {
  if (await isCitus(knex)) {
    const condition = allHold(guards)
    const { rows: [{ holds }] } = await db.raw(`SELECT ${condition.sql} AS holds`, condition.bindings)
    return holds ? { write: db(table).insert(data).returning('*') } : undefined
  }
  const types = new Map((await columnsOf(knex, table, db)).map((column) => [column.name, column.type]))
  const columns = Object.keys(data).filter((column) => data[column] !== undefined)
  const values = columns.map((column) => {
    const type = types.get(column)
    return isRaw(data[column]) || !type ? '?' : `?::${quote(type)}`
  })
  const condition = allHold(guards)
  return {
    write: db.raw(
      `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) SELECT ${values.join(', ')} WHERE ${condition.sql} RETURNING *`,
      [...columns.map((column) => data[column]), ...condition.bindings] as Knex.RawBinding[]
    )
  }
}

const isRaw = (value: unknown) => typeof value === 'object' && value !== null && (value as { isRawInstance?: boolean }).isRawInstance === true
