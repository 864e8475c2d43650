import SwaggerParser from '@apidevtools/swagger-parser'
import { Ajv } from '@feathersjs/schema'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * Hostile requests derived from the published document (GET /openapi.json): for every operation,
 * bodies of the wrong kind, a wrong value for each property of its body and each of its query
 * parameters, malformed path ids, unknown filters, overlong text, NUL characters and credentials
 * of both kinds at once, sent with an owner's API key or JWT. None may be a 5xx, and every error
 * answer must have the spec's shape. The values come from fixed lists, picked by a seeded
 * generator: every run sends the same requests.
 */

const VERBS = ['get', 'post', 'put', 'patch', 'delete'] as const
type Verb = (typeof VERBS)[number]

interface Operation {
  key: string
  verb: Verb
  /** The path with its parameters as {name}; a custom method's fragment taken off. */
  template: string
  customMethod?: string
  operation: any
  isPublic: boolean
}

interface Call {
  verb: Verb
  path: string
  query?: string
  headers?: Record<string, string>
  /** Raw JSON text, sent as written (numbers beyond a double, lone keys); none when empty. */
  body?: string
  contentType?: string
  variant: string
}

/** mulberry32: a small seeded generator, so that the picks are the same on every run. */
function seeded(seed: number) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const random = seeded(36)
const pick = <T>(items: T[], count: number): T[] => {
  const pool = [...items]
  const picked: T[] = []
  while (picked.length < count && pool.length) picked.push(pool.splice(Math.floor(random() * pool.length), 1)[0])
  return picked
}

// Values as raw JSON text: numbers a double cannot hold must reach the server as written.
const LONG_TEXT = JSON.stringify('x'.repeat(20_000))
const HOSTILE_JSON: Record<string, string[]> = {
  string: ['123', 'true', '{}', '[]', 'null', LONG_TEXT, '"a\\u0000b"', '""', '"   "', '"\\ud800"', '"9999-99-99"', '"\'; drop table users; --"'],
  'date-time': ['"2026-02-30T10:00:00Z"', '"99999-01-01T00:00:00.000Z"', '"0000-01-01T00:00:00.000Z"', '"yesterday"', '1767225600'],
  date: ['"2026-02-30"', '"0000-01-01"', '"99999-12-31"', '"2026-1-1"', '20260101'],
  integer: ['"abc"', '1.5', '-1', '0', '99999999999999999999', '2147483648', '1e400', '-1e400', 'null', '{}', '[1]', '"1"'],
  number: ['"abc"', '-1', '99999999999999999999', '1e400', '1e-400', '0.000000001', 'null', '{}', '"1e5"', '"NaN"'],
  boolean: ['"yes"', '1', 'null', '"true"', '[]'],
  array: ['"x"', '{}', '[null]', '[[[]]]', `[${Array.from({ length: 600 }, (_, i) => i + 1).join(',')}]`, '["a\\u0000"]', '[99999999999999999999]'],
  object: ['"x"', '[]', '42', '{"$gt":1}', '{"__proto__":{"admin":true}}', '{"a":{"b":{"c":{"d":{"e":{"f":{}}}}}}}']
}
const HOSTILE_QUERY: Record<string, string[]> = {
  string: ['a%00b', 'x'.repeat(5_000), '%27%3B--', '', '%F0%9F%92%A5'],
  'date-time': ['2026-02-30T10:00:00Z', '99999-01-01T00:00:00Z', 'yesterday'],
  date: ['2026-02-30', '99999-12-31', 'x'],
  integer: ['abc', '1.5', '-1', '99999999999999999999', '2147483648', '1e400'],
  number: ['abc', '99999999999999999999', '1e400', 'NaN', 'Infinity'],
  boolean: ['yes', '2', ''],
  array: ['x', '99999999999999999999'],
  object: ['x']
}
const MALFORMED_IDS = ['abc', '1.5', '-1', '99999999999999999999', '0', '2147483648', '1e3', '%00', '%20']
const MISSING_ID = '2000000000'
// '' sends no body at all.
const RAW_BODIES = ['', '[]', '[1]', '[{}]', '"text"', '42', 'null', 'true', '{"":1}', '{"a":1,"a":2}']
const QUERY_EXTRAS = ['$limit=-1', '$limit=abc', '$skip=99999999999999999999', '$sort[no_such_field]=1', 'a[b][c][d][e][f][g]=1', '$or=x', 'organization_id=abc', 'id[$in]=abc']
type Variant = (base: Call, owner: Tenant) => Call
const HEADER_VARIANTS: Variant[] = [
  (base, owner) => ({ ...base, headers: { 'x-api-key': 'crm_nope_nope', ...owner.bearer }, variant: 'an invalid key and a JWT' }),
  (base, owner) => ({ ...base, headers: { ...owner.key, Authorization: 'Bearer not.a.jwt' }, variant: 'an API key and an invalid JWT' }),
  (base) => ({ ...base, headers: { ...base.headers, Authorization: 'Basic YTpi' }, variant: 'a Basic Authorization' })
]
const WRITE_HEADER_VARIANTS: Variant[] = [
  (base) => ({ ...base, headers: { ...base.headers, 'X-Service-Method': 'no-such-method' }, variant: 'unknown X-Service-Method' }),
  (base) => ({ ...base, body: 'hello', contentType: 'text/plain', variant: 'text body' }),
  (base) => ({ ...base, body: base.body ?? '{}', contentType: 'application/x-www-form-urlencoded', variant: 'form content type' }),
  (base) => ({ ...base, headers: { ...base.headers, 'Idempotency-Key': 'k'.repeat(300) }, variant: 'overlong Idempotency-Key' })
]

/** The kind of value a schema takes, for the lists above. */
function kindOf(schema: any): string {
  const branch = (schema?.anyOf ?? schema?.oneOf ?? [schema]).find((b: any) => b && b.type !== 'null') ?? schema ?? {}
  if (branch.anyOf || branch.oneOf) return kindOf(branch)
  const type = [branch.type].flat()[0]
  if (type === 'string' && (branch.format === 'date-time' || branch.format === 'date')) return branch.format
  return HOSTILE_JSON[type] ? type : 'string'
}

/** The object a JSON body is: its schema (the object branch of a one-or-many create). */
function bodySchemaOf(operation: any): any {
  const schema = operation.requestBody?.content?.['application/json']?.schema
  if (!schema) return undefined
  return (schema.oneOf ?? [schema]).find((branch: any) => branch.type === 'object' || branch.properties) ?? schema
}

const exampleBodyOf = (operation: any): Record<string, unknown> => {
  const example = operation.requestBody?.content?.['application/json']?.example
  return example && typeof example === 'object' && !Array.isArray(example) ? example : {}
}

/** A JSON object's text with one property's value given as raw JSON. */
function withRaw(base: Record<string, unknown>, property: string, raw: string) {
  const { [property]: _replaced, ...rest } = base
  const others = JSON.stringify(rest).slice(1, -1)
  return `{${JSON.stringify(property)}:${raw}${others ? `,${others}` : ''}}`
}

type Check = ReturnType<InstanceType<typeof Ajv>['compile']>

const SPEC_ERROR_KEYS = ['name', 'message', 'code', 'className', 'errors', 'data']
const INTERNALS = /\b(select .+ from|insert into|update .+ set|delete from)\b|syntax error|node_modules|\.[jt]s:\d+/i

/**
 * What is wrong with an error answer, measured against the document itself: its Error schema
 * (JSON-RPC's on /mcp, where the transport answers in JSON-RPC), the spec's keys only, code equal
 * to the status, no SQL or stack in the message.
 */
function errorShapeProblem(status: number, body: any, key: string, schemas: { error: Check; jsonRpcError: Check }) {
  if (key === '/mcp' && schemas.jsonRpcError(body)) return undefined
  if (!schemas.error(body)) return `not the Error schema: ${JSON.stringify(schemas.error.errors)}`
  const extra = Object.keys(body).filter((name) => !SPEC_ERROR_KEYS.includes(name))
  if (extra.length) return `unexpected keys ${extra.join(', ')}`
  if (body.code !== status) return `code ${body.code} on a ${status}`
  if (INTERNALS.test(body.message)) return 'the message shows internals'
  return undefined
}

describe('hostile requests derived from the OpenAPI document', () => {
  let t: TestApp
  let acme: Tenant
  let operations: Operation[]
  let errorSchemas: { error: Check; jsonRpcError: Check }
  /** A live record of each collection where the document's example creates one: its id for calls by id. */
  const liveIds = new Map<string, string>()

  beforeAll(async () => {
    t = await startApp({ rateLimitEnabled: false })
    acme = await createTenant(t, 'Fuzz')
    const document: any = await SwaggerParser.dereference((await t.http().get('/openapi.json')).body)
    const ajv = new Ajv({ strict: false })
    errorSchemas = { error: ajv.compile(document.components.schemas.Error), jsonRpcError: ajv.compile(document.components.schemas.JsonRpcError) }
    operations = Object.entries<any>(document.paths).flatMap(([key, item]) =>
      VERBS.filter((verb) => item[verb]).map((verb) => {
        const [template, customMethod] = key.split('#')
        const operation = item[verb]
        return { key, verb, template, customMethod, operation, isPublic: Array.isArray(operation.security) && operation.security.length === 0 }
      }))
    liveIds.set('/users', String(acme.user.id))
    liveIds.set('/organizations', String(acme.organization.id))
    for (const { template, verb, customMethod, operation, isPublic } of operations) {
      if (verb !== 'post' || customMethod || isPublic || template.includes('{') || !bodySchemaOf(operation) || liveIds.has(template)) continue
      const body = { ...exampleBodyOf(operation), organization_id: acme.organization.id }
      const created = await t.http().post(template).set(acme.bearer).send(body)
      if (created.status === 201 && created.body?.id) liveIds.set(template, String(created.body.id))
    }
  }, 120_000)
  afterAll(async () => {
    await t?.close()
  })

  /** The path of an operation with its parameters filled: a live (or missing) record id, a word for slugs and tokens, or `id` as given. */
  function pathOf(op: Operation, id?: string) {
    return op.template.replace(/\{(\w+)\}/g, (_match, name: string) => {
      const parameter = op.operation.parameters?.find((p: any) => p.in === 'path' && p.name === name)
      if (id !== undefined) return id
      return parameter?.schema?.type === 'integer' ? liveIds.get(op.template.split('/{')[0]) ?? MISSING_ID : 'nope'
    })
  }

  /** Credentials by turn (API key, then JWT), none on public routes; a JWT names the organization where the operation takes one. */
  let turn = 0
  function credentials(op: Operation) {
    if (op.isPublic) return { headers: {}, organization: undefined }
    return turn++ % 2 === 0 ? { headers: acme.key, organization: undefined } : { headers: acme.bearer, organization: acme.organization.id }
  }

  /** The headers the document requires (X-Service-Method, a visitor token, a provider signature). */
  function requiredHeaders(op: Operation): Record<string, string> {
    const headers: Record<string, string> = { Accept: 'application/json, text/event-stream' }
    for (const parameter of op.operation.parameters ?? []) {
      if (parameter.in !== 'header' || !parameter.required) continue
      headers[parameter.name] = String(parameter.schema?.enum?.[0] ?? parameter.example ?? 'nope')
    }
    return headers
  }

  /** Sends the call; a 5xx, or an error answer not in the spec's shape, goes to failures. */
  async function send(failures: string[], op: Operation, call: Call) {
    const url = call.query ? `${call.path}?${call.query}` : call.path
    let request = t.http()[call.verb](url).set({ ...requiredHeaders(op), ...call.headers })
    if (call.body) request = request.set('Content-Type', call.contentType ?? 'application/json').send(call.body)
    const response = await request
    const method = op.customMethod ? ` (X-Service-Method: ${op.customMethod})` : ''
    const where = `${call.verb.toUpperCase()} ${url.slice(0, 120)}${method} [${call.variant}]`
    if (response.status >= 500) {
      failures.push(`${where} → ${response.status} ${response.text.slice(0, 200)}`)
      return
    }
    if (response.status >= 400) {
      const problem = errorShapeProblem(response.status, response.body, op.template, errorSchemas)
      if (problem) failures.push(`${where} → ${response.status} ${problem}: ${response.text.slice(0, 200)}`)
    }
  }

  /** A call of the operation as a client following the document would make it, with the example body. */
  function baseCall(op: Operation, variant: string): Call {
    const { headers, organization } = credentials(op)
    const schema = bodySchemaOf(op.operation)
    const example = exampleBodyOf(op.operation)
    // The login's example logs the owner in, so that its variants reach past the password check.
    const login = example.strategy === 'local' ? { email: acme.user.email, password: acme.password } : {}
    const body = schema ? { ...example, ...login, ...(organization && schema.properties?.organization_id ? { organization_id: organization } : {}) } : undefined
    const takesOrganization = op.operation.parameters?.some((p: any) => p.in === 'query' && p.name === 'organization_id')
    return {
      verb: op.verb,
      path: pathOf(op),
      headers,
      query: organization && takesOrganization ? `organization_id=${organization}` : undefined,
      body: body === undefined ? undefined : JSON.stringify(body),
      variant
    }
  }

  const withQuery = (call: Call, extra: string) => ({ ...call, query: [call.query, extra].filter(Boolean).join('&') })

  it('when a body is not one JSON object, or one property of it has a wrong or extreme value, then no 5xx and every error in the spec\'s shape', async () => {
    const failures: string[] = []
    for (const op of operations) {
      const schema = bodySchemaOf(op.operation)
      if (!schema) continue
      for (const raw of pick(RAW_BODIES, 3)) await send(failures, op, { ...baseCall(op, `body ${raw}`), body: raw })
      const example = JSON.parse(baseCall(op, '').body!)
      for (const [property, propertySchema] of Object.entries<any>(schema.properties ?? {})) {
        for (const raw of pick(HOSTILE_JSON[kindOf(propertySchema)], 2)) {
          await send(failures, op, { ...baseCall(op, `${property}: ${raw.slice(0, 40)}`), body: withRaw(example, property, raw) })
        }
      }
      await send(failures, op, { ...baseCall(op, 'unknown property'), body: withRaw(example, 'no_such_field\u0000', '1') })
    }
    expect(failures, failures.join('\n')).toEqual([])
  }, 120_000)

  it('when a path id is malformed (abc, 1.5, -1, 99999999999999999999, ...), then no 5xx and every error in the spec\'s shape', async () => {
    const failures: string[] = []
    for (const op of operations.filter((candidate) => candidate.template.includes('{'))) {
      for (const id of pick(MALFORMED_IDS, 4)) await send(failures, op, { ...baseCall(op, `id ${id}`), path: pathOf(op, id) })
    }
    expect(failures, failures.join('\n')).toEqual([])
  }, 120_000)

  it('when a query carries an unknown filter, a wrong value for a documented one, or nesting, then no 5xx and every error in the spec\'s shape', async () => {
    const failures: string[] = []
    for (const op of operations) {
      for (const extra of ['searchTerm=ab', ...pick(QUERY_EXTRAS, 1)]) {
        await send(failures, op, withQuery(baseCall(op, `query ${extra}`), extra))
      }
      for (const parameter of (op.operation.parameters ?? []).filter((p: any) => p.in === 'query' && p.name !== 'organization_id')) {
        const name = parameter.style === 'deepObject' ? `${parameter.name}[${Object.keys(parameter.schema?.properties ?? { id: 1 })[0]}]` : parameter.name
        for (const value of pick(HOSTILE_QUERY[kindOf(parameter.schema)], 1)) {
          await send(failures, op, withQuery(baseCall(op, `${name}=${value.slice(0, 40)}`), `${encodeURIComponent(name)}=${value}`))
        }
      }
    }
    expect(failures, failures.join('\n')).toEqual([])
  }, 120_000)

  it('when headers conflict (credentials of both kinds, an unknown custom method, a text body, an overlong Idempotency-Key), then no 5xx and every error in the spec\'s shape', async () => {
    const failures: string[] = []
    for (const op of operations) {
      const base = baseCall(op, '')
      const writes = op.verb === 'post' || op.verb === 'patch'
      await send(failures, op, { ...base, headers: { ...acme.key, ...acme.bearer }, variant: 'an API key and a JWT' })
      for (const variant of pick(writes ? [...HEADER_VARIANTS, ...WRITE_HEADER_VARIANTS] : HEADER_VARIANTS, 1)) await send(failures, op, variant(base, acme))
    }
    expect(failures, failures.join('\n')).toEqual([])
  }, 120_000)

  it('when the hostile requests are over, then the owner\'s API key and JWT still work (the variants above were not refused for want of credentials)', async () => {
    expect((await t.http().get('/companies').set(acme.key)).status).toBe(200)
    expect((await t.http().get('/organizations').set(acme.bearer)).status).toBe(200)
  })
})
