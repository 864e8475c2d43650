import { stringify } from 'csv-stringify/sync'
import type { Knex } from 'knex'
import type { Params } from '@feathersjs/feathers'
import { databaseOf } from '../db.js'
import { loadDefinitions } from '../hooks/custom-field-values.js'
import { columnsOf, quote } from './catalog.js'
import { customFieldsProperty } from './read-model.js'
import type { ReadModel, Relation } from './read-model.js'
import type { CallOwner } from './rendered-answer.js'
import { routed } from './citus.js'

/**
 * A list as CSV (docs/import-export.md): `Accept: text/csv` on GET /<resource> answers every
 * record its filters, sort and $select select, read in keyset pages so that memory stays flat
 * whatever the number of records, each page one statement of the read model.
 */

/** Records read per statement. */
export const CSV_PAGE = 1000

declare module '@feathersjs/feathers' {
  interface Params {
    /** The call asked for CSV (Accept: text/csv): only the call it owns answers with it (see src/rest.ts). */
    csv?: CallOwner
    /** An export of at most this many rows (the MCP tool's cap). */
    csvMaxRows?: number
  }
}

/** The answer of a list asked for as CSV: its text in chunks, sent as a stream by the REST transport. */
export class CsvAnswer {
  constructor(
    readonly chunks: AsyncIterable<string>,
    readonly fileName: string
  ) {}
}

/** What the export needs of a service: its read model and its list query (RecordService). */
export interface ExportedService {
  model: ReadModel
  table: string
  knex: Knex
  createQuery(params: any): Knex.QueryBuilder
}

interface SortKey {
  column: string
  descending: boolean
  type: string
  nullable: boolean
}

interface CsvColumn {
  header: string
  cell: (record: Record<string, any>) => unknown
}

const FORMULA_START = /^[=+\-@\t\r]/
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/

/**
 * A cell a spreadsheet would run as a formula gets a leading single quote (OWASP's CSV injection
 * advice); a plain number such as -12.50 is not a formula and stays as it is.
 */
export const escapeFormula = (text: string) => (FORMULA_START.test(text) && !PLAIN_NUMBER.test(text) ? `'${text}` : text)

/** A value of a record as one cell: text as it is, lists joined by "; ", objects as JSON. */
function cellOf(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return escapeFormula(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' || typeof item === 'number')) return escapeFormula(value.join('; '))
  return escapeFormula(JSON.stringify(value))
}

/** A related record by its name: a name, a person's first and last names, a title, else its id. */
function nameOf(related: any): unknown {
  if (related === null || related === undefined) return null
  if (Array.isArray(related)) return related.map(nameOf).filter((name) => name !== null && name !== '').join('; ')
  if (typeof related !== 'object') return related
  if (typeof related.name === 'string') return related.name
  const person = [related.first_name, related.last_name].filter(Boolean).join(' ')
  if (person) return person
  return related.title ?? related.id ?? null
}

/** pipelineStage → pipeline_stage, as the other columns are named. */
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)

/** Columns that hold no null (keyset conditions on them need no NULL cases), read once per database. */
const notNullColumns = new WeakMap<Knex, Map<string, Promise<Set<string>>>>()
function notNullOf(db: Knex, base: Knex, table: string): Promise<Set<string>> {
  let tables = notNullColumns.get(base)
  if (!tables) notNullColumns.set(base, (tables = new Map()))
  let columns = tables.get(table)
  if (!columns) {
    columns = db.raw(`SELECT attname FROM pg_attribute WHERE attrelid = ?::regclass AND attnum > 0 AND attnotnull AND NOT attisdropped`, [table])
      .then(({ rows }: { rows: { attname: string }[] }) => new Set(rows.map((row) => row.attname)))
    columns.catch(() => tables!.delete(table))
    tables.set(table, columns)
  }
  return columns
}

/** The list's order as keyset keys: its $sort, then id (the tie-break createQuery adds). */
async function sortKeys(service: ExportedService, db: Knex, sort: Record<string, unknown> | undefined): Promise<SortKey[]> {
  const types = new Map((await columnsOf(service.knex, service.table, db)).map((column) => [column.name, column.type]))
  const notNull = await notNullOf(db, service.knex, service.table)
  const entries = Object.entries(sort ?? {}).map(([column, direction]) => ({ column, descending: Number(direction) === -1 }))
  if (!entries.some((entry) => entry.column === 'id')) entries.push({ column: 'id', descending: entries[0]?.descending ?? false })
  return entries.map(({ column, descending }) => ({ column, descending, type: types.get(column) ?? 'text', nullable: !notNull.has(column) }))
}

/**
 * The rows after the cursor (the sort keys of the last row read, as text) in the list's order.
 * One row comparison when every key is non-null and sorted one way (a range of the list's
 * index); otherwise the expanded form, with NULLs where Postgres sorts them (last ascending,
 * first descending).
 */
function afterCursor(builder: Knex.QueryBuilder, table: string, keys: SortKey[], cursor: (string | null)[]) {
  const ref = (key: SortKey) => `${quote(table)}.${quote(key.column)}`
  const value = (key: SortKey) => `?::${quote(key.type)}`
  const oneWay = keys.every((key) => key.descending === keys[0].descending)
  if (oneWay && keys.every((key) => !key.nullable)) {
    builder.whereRaw(`(${keys.map(ref).join(', ')}) ${keys[0].descending ? '<' : '>'} (${keys.map(value).join(', ')})`, cursor)
    return
  }
  const alternatives: string[] = []
  const bindings: (string | null)[] = []
  keys.forEach((key, position) => {
    const mine: (string | null)[] = []
    const conditions = keys.slice(0, position).map((previous, index) => {
      if (cursor[index] === null) return `${ref(previous)} IS NULL`
      mine.push(cursor[index])
      return `${ref(previous)} = ${value(previous)}`
    })
    const at = cursor[position]
    if (at === null) {
      // NULLs sort last ascending (nothing comes after them) and first descending.
      if (!key.descending) return
      conditions.push(`${ref(key)} IS NOT NULL`)
    } else {
      mine.push(at)
      conditions.push(`(${ref(key)} ${key.descending ? '<' : '>'} ${value(key)}${key.nullable && !key.descending ? ` OR ${ref(key)} IS NULL` : ''})`)
    }
    alternatives.push(`(${conditions.join(' AND ')})`)
    bindings.push(...mine)
  })
  builder.whereRaw(alternatives.length ? `(${alternatives.join(' OR ')})` : 'false', bindings)
}

/** The CSV columns of a resource: its properties in order, custom fields one column each by name, relations by name. */
function csvColumns(model: ReadModel, select: string[] | undefined, customFieldNames: string[]): CsvColumn[] {
  const { schema, hidden = [], customFields, list = [], record = [] } = model.declaration
  const relations = new Map<string, Relation>([...list, ...record].map((relation) => [relation.as, relation]))
  const customProperty = customFields ? customFieldsProperty(customFields.by) : undefined
  const names = Object.keys(schema.properties).filter((name) => !hidden.includes(name) && (!select || name === 'id' || select.includes(name)))
  const taken = new Set(names)
  const columns: CsvColumn[] = []
  for (const name of names) {
    if (name === customProperty) {
      for (const field of customFieldNames) {
        const header = taken.has(field) ? `${customProperty}.${field}` : field
        columns.push({ header, cell: (row) => row[name]?.[field] })
      }
    } else if (relations.has(name)) {
      columns.push({ header: `${snakeCase(name)}_name`, cell: (row) => nameOf(row[name]) })
    } else {
      columns.push({ header: name, cell: (row) => row[name] })
    }
  }
  return columns
}

/**
 * The CSV text of a list, in chunks: the header, then one chunk per page. `params` is the
 * list's call after its hooks (tenant scope, read request), `sort` its validated $sort.
 */
export async function* csvOfList(service: ExportedService, params: Params, sort: Record<string, unknown> | undefined): AsyncIterable<string> {
  const db = databaseOf(params as { transaction?: { trx?: Knex.Transaction } }, service.knex)
  const read = params.read ?? {}
  const { customFields } = service.model.declaration
  const organizationId = (params.query as any)?.organization_id
  const definitions = customFields && typeof organizationId === 'number' && (!read.select || read.select.includes(customFieldsProperty(customFields.by)))
    ? await loadDefinitions(db, [organizationId], customFields.entity)
    : []
  const columns = csvColumns(service.model, read.select, definitions.map((definition) => definition[customFields?.by ?? 'name']))
  yield stringify([columns.map((column) => column.header)])
  const keys = await sortKeys(service, db, sort)
  const projection = await service.model.projection(db, { relations: read.relations, select: read.select })
  const cursorOf = `json_build_array(${keys.map((key) => `p.${quote(key.column)}::text`).join(', ')}) AS "__cursor"`
  let remaining = Math.min(read.csv?.limit ?? Infinity, params.csvMaxRows ?? Infinity)
  let cursor: (string | null)[] | undefined
  while (remaining > 0) {
    const size = Math.min(CSV_PAGE, remaining)
    const rows = service.createQuery(params).limit(size)
    if (cursor) afterCursor(rows, service.table, keys, cursor)
    const statement = await routed(service.knex, db, {
      raw: db.raw(`SELECT COALESCE(array_to_json(array_agg(r)), '[]'::json)::text AS answer FROM (SELECT ${projection}, ${cursorOf} FROM (?) AS p) AS r`, [rows])
    }, typeof organizationId === 'number' ? organizationId : undefined)
    const { rows: [page] } = await statement.raw
    const records: Record<string, any>[] = JSON.parse(page.answer)
    if (records.length > 0) yield stringify(records.map((record) => columns.map((column) => cellOf(column.cell(record)))))
    if (records.length < size) return
    cursor = records[records.length - 1].__cursor
    remaining -= records.length
  }
}
