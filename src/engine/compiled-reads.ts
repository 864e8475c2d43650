import type { Knex } from 'knex'
import type { Statement } from './read-model.js'

/**
 * Read statements compiled once per shape. knex builds a read by id the same way on every call;
 * only the values differ, so building it again each time is work without a result. The first call
 * of a shape builds the statement with stand-ins for its values and records where each stand-in
 * lands among the statement's parameters; later calls of the shape put their own values there.
 *
 * A shape is everything that can change the text: the caller's key (the service, the relations,
 * deleted rows or not) and the query's structure (its keys and operators, the length of each
 * array, which values are null). A shape whose stand-ins do not come out once each among the
 * parameters (a value written into the text, as a $select column is) is built on every call.
 */

/** The values of one call: the query and the id, walked in a fixed order. */
export interface ReadValues {
  query: Record<string, unknown>
  id: unknown
}

interface Compiled {
  sql: string
  /** The text with numbered parameters ($1, $2 …), as the server runs it. */
  native: string
  /** Each parameter: the slot of a call's value, or a value the shape fixes (a LIMIT, a subclass's condition). */
  parameters: ({ slot: number } | { fixed: unknown })[]
}

const MAX_SHAPES = 500
const STAND_IN = /^\u0001crm-value-(\d+)\u0001$/
const standIn = (slot: number) => `\u0001crm-value-${slot}\u0001`

export class CompiledReads {
  private shapes = new Map<string, Compiled | null>()

  /**
   * The statement of a call: `build` writes it from values (the call's own, or stand-ins) on
   * `db`, the connection it will run on.
   */
  async statement(db: Knex, key: string, values: ReadValues, build: (values: ReadValues) => Promise<Statement>): Promise<Statement> {
    const walked = walk(values)
    if (!walked) return build(values)
    const shape = `${key}|${walked.shape}`
    let compiled = this.shapes.get(shape)
    if (compiled === undefined) {
      compiled = compile(await build(walked.standIns), walked.values.length)
      if (this.shapes.size >= MAX_SHAPES) this.shapes.clear()
      this.shapes.set(shape, compiled)
    }
    if (compiled === null) return build(values)
    const bindings = compiled.parameters.map((parameter) => ('slot' in parameter ? walked.values[parameter.slot] : parameter.fixed))
    return { raw: db.raw(compiled.sql, bindings as Knex.RawBinding[]), native: { sql: compiled.native, bindings } }
  }
}

/** The statement's text and where each stand-in landed, or null when they did not land once each among the parameters. */
function compile({ raw }: Statement, slots: number): Compiled | null {
  const compiled = raw.toSQL()
  const { sql, bindings } = compiled
  if (sql.includes('\u0001')) return null
  const seen = new Set<number>()
  const parameters = bindings.map((binding) => {
    const match = typeof binding === 'string' ? STAND_IN.exec(binding) : null
    if (!match) return { fixed: binding }
    seen.add(Number(match[1]))
    return { slot: Number(match[1]) }
  })
  const landed = parameters.filter((parameter) => 'slot' in parameter).length
  return seen.size === slots && landed === slots ? { sql, native: compiled.toNative().sql, parameters } : null
}

/**
 * The shape of a call's values, its values in walking order, and the same structure with a
 * stand-in for each value; undefined for a value that is neither JSON nor a Date (a knex Raw, say),
 * whose text knex would write itself.
 */
function walk(values: ReadValues): { shape: string; values: unknown[]; standIns: ReadValues } | undefined {
  const found: unknown[] = []
  const visit = (value: unknown): { shape: string; standIn: unknown } | undefined => {
    if (value === null || value === undefined) return { shape: String(value), standIn: value }
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value instanceof Date) {
      found.push(value)
      return { shape: '?', standIn: standIn(found.length - 1) }
    }
    if (Array.isArray(value)) {
      const items = value.map(visit)
      if (items.some((item) => item === undefined)) return undefined
      return { shape: `[${items.map((item) => item!.shape).join(',')}]`, standIn: items.map((item) => item!.standIn) }
    }
    const prototype = Object.getPrototypeOf(value)
    if (prototype !== Object.prototype && prototype !== null) return undefined
    const shapes: string[] = []
    const standIns: Record<string, unknown> = {}
    for (const [name, member] of Object.entries(value as Record<string, unknown>)) {
      const item = visit(member)
      if (!item) return undefined
      shapes.push(`${JSON.stringify(name)}:${item.shape}`)
      standIns[name] = item.standIn
    }
    return { shape: `{${shapes.join(',')}}`, standIn: standIns }
  }
  const query = visit(values.query)
  const id = visit(values.id)
  if (!query || !id) return undefined
  return { shape: `${query.shape}#${id.shape}`, values: found, standIns: { query: query.standIn as Record<string, unknown>, id: id.standIn } }
}
