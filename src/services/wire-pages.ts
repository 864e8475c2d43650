import type { Knex } from 'knex'
import type { Resolver } from '@feathersjs/schema'
import type { HookContext } from '../declarations.js'
import { hidden } from '../hooks/resolve-records.js'
import { customFieldsPropertyOf } from './custom-fields/custom-field-values.js'
import type { CustomFieldAddressing } from './custom-fields/custom-field-values.js'
import type { CustomFieldEntity } from './custom-fields/custom-fields.schema.js'

/**
 * Wire pages: a list page a client asked for over HTTP, answered as the JSON text Postgres wrote
 * for each record, instead of rows parsed into objects, copied by the resolvers and written out
 * again by JSON.stringify (per-row work that was half of a joined page's CPU in node).
 *
 * Only where the text is exactly what the resolvers would send: a resource whose result
 * resolvers hide columns or give custom-field values and nothing else (wireShapeOf), every
 * column of a type whose JSON Postgres writes as the driver's value would be written
 * (wireColumnValue), on a page RecordService reads with a compiled statement. Anything else,
 * or a record with a value outside what the SQL formats (a timestamp before year 1 or after
 * 9999), takes the usual path.
 */

/** What the result and external resolvers do to a record, when they do nothing but this. */
export interface WireShape {
  /** Columns never sent. */
  hidden: string[]
  /** A property giving the record's custom-field values (custom_fields_by_name or _by_key). */
  customFields?: { property: string; entity: CustomFieldEntity; by: CustomFieldAddressing }
}

/** The resolvers' work as a WireShape, or undefined when a resolver does anything else. */
export function wireShapeOf(result: Resolver<any, HookContext>[], external?: Resolver<any, HookContext>): WireShape | undefined {
  const shape: WireShape = { hidden: [] }
  const plain = (resolver: Resolver<any, HookContext>) => !resolver.options.converter && !resolver.options.schema
  for (const resolver of result) {
    if (!plain(resolver)) return undefined
    for (const [name, property] of Object.entries(resolver.options.properties as Record<string, object>)) {
      const custom = customFieldsPropertyOf(property)
      if (!custom || shape.customFields) return undefined
      shape.customFields = { property: name, ...custom }
    }
  }
  if (external) {
    if (!plain(external)) return undefined
    for (const [name, property] of Object.entries(external.options.properties as Record<string, unknown>)) {
      if (property !== hidden) return undefined
      shape.hidden.push(name)
    }
  }
  return shape
}

/** A column of a table: its name and its type as pg_type names it. */
export interface TableColumn {
  name: string
  type: string
  category: string
}

export async function tableColumns(db: Knex, table: string): Promise<TableColumn[]> {
  const { rows } = await db.raw(
    `SELECT a.attname AS name, t.typname AS type, t.typcategory AS category
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = ?::regclass AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [table]
  )
  return rows
}

/** A record stores no custom-field values: its text has `{}` for them whatever the definitions (wireProjection, wireVersion). */
const noCustomValues = (stored: string) => `${stored} IS NULL OR ${stored} = '{}'::jsonb`
const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`
/** The ISO text JSON writes for a Date, in milliseconds (what timestampText and toISOString give). */
const ISO_MILLISECONDS = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`

/**
 * A column's value in a record's JSON text, as the API sends it, and what the value must satisfy
 * for the SQL to write exactly that; undefined for a type this does not cover (the resource keeps
 * the usual path). The driver's readings it matches: timestamptz as ISO text in UTC with
 * milliseconds, dates and times as Postgres's text, numeric as text (money stays exact), int8 as
 * a number (src/db.ts), json and jsonb as their JSON. NULL stays NULL (written as null).
 */
export function wireColumnValue(column: TableColumn, value: string): { sql: string; holds?: string } | undefined {
  const quotedText = (text: string) => `'"' || ${text} || '"'`
  switch (column.type) {
    case 'timestamptz':
      return {
        sql: quotedText(`to_char(${value} AT TIME ZONE 'UTC', ${ISO_MILLISECONDS})`),
        holds: `(${value} IS NULL OR (${value} >= '0001-01-01 00:00:00+00' AND ${value} < '10000-01-01 00:00:00+00'))`
      }
    case 'date':
      return { sql: quotedText(`${value}::text`), holds: `(${value} IS NULL OR ${value} BETWEEN '0001-01-01' AND '9999-12-31')` }
    case 'int8':
      return { sql: `${value}::text`, holds: `(${value} IS NULL OR abs(${value}) <= 9007199254740991)` }
    case 'numeric': case 'time':
      return { sql: quotedText(`${value}::text`) }
    case 'int2': case 'int4': case 'bool': case 'json': case 'jsonb':
      return { sql: `${value}::text` }
    case 'uuid': case '_int2': case '_int4': case '_text': case '_varchar': case '_bool':
      return { sql: `to_json(${value})::text` }
    default:
      // Text of any kind (text, varchar, citext) and enums: JSON strings of the driver's text.
      return column.category === 'S' || column.category === 'E' ? { sql: `to_json(${value})::text` } : undefined
  }
}

/**
 * The select list that turns a statement's rows (the subquery `page`) into a record's JSON text
 * (`crm_wire`, NULL where a value falls outside what the SQL formats). The text is concatenated:
 * json_build_object looks up how to write each argument's type on every call, which made it cost
 * Postgres about twice as much per record.
 * Undefined when a column's type is not covered.
 */
export function wireProjection(columns: TableColumn[], shape: WireShape, relations: string[], page = 'page'): string | undefined {
  const members: string[] = []
  const holds: string[] = []
  const ref = (name: string) => `${page}.${quoted(name)}`
  const member = (name: string, sql: string) => members.push(`${literal(`${members.length ? ',' : '{'}${JSON.stringify(name)}:`)} || COALESCE(${sql}, 'null')`)
  for (const column of columns) {
    if (shape.hidden.includes(column.name)) continue
    const value = wireColumnValue(column, ref(column.name))
    if (!value) return undefined
    member(column.name, value.sql)
    if (value.holds) holds.push(value.holds)
  }
  // Relations are JSON already (inlineRelationsSelect), or NULL.
  for (const relation of relations) member(relation, `${ref(relation)}::text`)
  const custom = shape.customFields
  if (custom) {
    if (!columns.some((column) => column.name === 'custom_fields') || !/^[a-z_]+$/.test(custom.entity)) return undefined
    const stored = ref('custom_fields')
    // customFieldsOutput: the live definitions of the record's organization in their order, each
    // whose stored value is present and not null, under its name (or key).
    member(custom.property, `CASE WHEN ${noCustomValues(stored)} THEN '{}' ELSE COALESCE((
      SELECT json_object_agg(d.${quoted(custom.by)}, ${stored} -> d.key ORDER BY d.position, d.id)
        FROM custom_fields d
       WHERE d.organization_id = ${ref('organization_id')} AND d.entity_type = ${literal(custom.entity)} AND d.deleted_at IS NULL
         AND jsonb_typeof(${stored} -> d.key) <> 'null')::text, '{}') END`)
  }
  if (members.length === 0) return undefined
  const record = `${members.join(' || ')} || '}'`
  const wire = holds.length ? `CASE WHEN ${holds.join(' AND ')} THEN ${record} END` : record
  return `${wire} AS crm_wire`
}

/**
 * The version of a record's text (record-texts.ts) as SQL text expressions on the rows of `table`
 * (unaliased). `own` is the record's own part: the row's xmin, then, where the record stores
 * custom-field values, its organization's definitions of the entity, every one of them with its
 * xmin (a renamed, added or deleted definition changes the names the values are sent under); an
 * empty custom_fields is sent as {} whatever the definitions, as wireProjection writes it.
 * `version` is the whole version: `own`, then, when there are relations, `|` and `relations` (the
 * relations' versions, inlineRelationVersions), so that a version's own part can be told from
 * it (ownPartOf).
 */
export function wireVersion(shape: WireShape, table: string, relations?: string): { own: string; version: string } {
  const row = (name: string) => `${quoted(table)}.${quoted(name)}`
  const parts = [`${quoted(table)}.xmin::text`]
  const custom = shape.customFields
  if (custom) {
    const stored = row('custom_fields')
    parts.push(`CASE WHEN ${noCustomValues(stored)} THEN '' ELSE COALESCE((
      SELECT string_agg(d.id::text || ',' || d.xmin::text, ';' ORDER BY d.id)
        FROM custom_fields d
       WHERE d.organization_id = ${row('organization_id')} AND d.entity_type = ${literal(custom.entity)}), '') END`)
  }
  const own = parts.join(` || '/' || `)
  return { own, version: relations ? `${own} || '|' || ${relations}` : own }
}

/** Whether `version` (a whole version, wireVersion) has `own` as its own part. */
export const ownPartOf = (version: string, own: string) =>
  version.startsWith(own) && (version.length === own.length || version.charCodeAt(own.length) === PIPE)

const PIPE = 0x7c

const COMMA = 0x2c
const CLOSE_BRACKET = 0x5d
const CLOSE_BRACE = 0x7d

/**
 * A list page of JSON texts, one per record, in its envelope (total, limit and skip; a keyset
 * page's limit, skip and next). Its `data` reads the texts as objects, for any code that looks at
 * the records (the page is then written the usual way); the formatter below writes the texts as
 * they are when nothing did.
 */
export class WirePage {
  #data?: Record<string, unknown>[]
  /** Each record's text, as a string or as its UTF-8 bytes (the record texts keep them so). */
  constructor(readonly envelope: Record<string, unknown>, readonly records: (string | Buffer)[]) {}

  get data() {
    return (this.#data ??= this.records.map((record) => JSON.parse(record.toString())))
  }

  /** Whether the records were read as objects (and perhaps changed). */
  get read() {
    return this.#data !== undefined
  }

  /**
   * The page as JSON.stringify would write it (the envelope, then the records' texts as `data`),
   * as UTF-8 bytes written once into one buffer. Joined into a string instead, the page was copied
   * three more times on the JavaScript heap on its way out (the join, Koa's byte count flattening
   * the concatenation, node prefixing the headers to a string body), some 130 KB of garbage for a
   * page of 50 deals; the buffer lives outside the heap and goes to the socket as it is.
   */
  bytes() {
    const envelope = JSON.stringify(this.envelope)
    const head = `${envelope.slice(0, -1)}${envelope.length > 2 ? ',' : ''}"data":[`
    const { records } = this
    let length = Buffer.byteLength(head) + Math.max(records.length - 1, 0) + 2
    for (const record of records) length += typeof record === 'string' ? Buffer.byteLength(record) : record.length
    const bytes = Buffer.allocUnsafe(length)
    let at = bytes.write(head)
    for (let i = 0; i < records.length; i++) {
      if (i > 0) bytes[at++] = COMMA
      const record = records[i]
      at += typeof record === 'string' ? bytes.write(record, at) : record.copy(bytes, at)
    }
    bytes[at++] = CLOSE_BRACKET
    bytes[at] = CLOSE_BRACE
    return bytes
  }

  toJSON() {
    return { ...this.envelope, data: this.data }
  }
}

/**
 * A record read by id, as the JSON text Postgres wrote for it (a wire get): the factory lets a
 * read by id come back as this only where nothing after the service method looks at the record
 * (no after hook on get, no relations to attach), and the formatter below writes the text as it
 * is. Anything that writes it otherwise gets the record (toJSON).
 */
export class WireRecord {
  constructor(readonly text: string) {}

  toJSON() {
    return JSON.parse(this.text)
  }
}

/**
 * The HTTP request of a call, in its params (params.wireRequest): a page may be answered as wire
 * text only to the call the request made itself, never to a call that copied its params (a hook
 * calling another service), which expects records.
 */
export class WireRequest {
  readonly #ctx: { hook?: unknown }
  constructor(ctx: { hook?: unknown }) {
    this.#ctx = ctx
  }

  /** This is the request's own call (Feathers' Koa transport keeps its hook context in ctx.hook). */
  owns(context: object) {
    return this.#ctx.hook === context
  }

  toJSON() {
    return {}
  }
}

/**
 * The last before hook of a list or a read by id: the request's own call, asking no $select and
 * (a read by id) no relations, may be answered as wire text (params.asWire). Set last, so that a
 * call an earlier hook made with a copy of the params never carries it; the service's own calls
 * (a subclass's find) do.
 */
export const answerAsWire = (context: HookContext) => {
  const { params } = context
  if (params.wireRequest?.owns(context) && !params.selectFields && !(context.method === 'get' && params.joinList)) params.asWire = true
}

type KoaContext = { method: string; feathers?: Record<string, unknown>; hook?: unknown; body?: unknown; type?: string; lookup?: { params?: Record<string, string> } }

/**
 * Koa middleware of a resource with wire pages: its list requests (GET without an id), and its
 * reads by id where those may be wire records too, carry their WireRequest.
 */
export const wireRequests = (records: boolean) => (ctx: KoaContext, next: () => Promise<unknown>) => {
  if (ctx.method === 'GET' && (records || ctx.lookup?.params?.__id === undefined)) ctx.feathers = { ...ctx.feathers, wireRequest: new WireRequest(ctx) }
  return next()
}

/** The REST transport's formatter: a wire page nothing read, or a wire record, is written as its text. */
export const wireFormatter = (ctx: KoaContext) => {
  const body = ctx.body
  if (body instanceof WireRecord) {
    ctx.type = 'application/json'
    ctx.body = body.text
  } else if (body instanceof WirePage && !body.read) {
    ctx.type = 'application/json'
    ctx.body = body.bytes()
  }
}
