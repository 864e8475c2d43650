import { createRequire } from 'node:module'
import path from 'node:path'
import feathersCore from '@feathersjs/feathers'
import serveStatic from 'koa-static'
import type { Context, Next } from 'koa'
import type { FeathersError } from '@feathersjs/errors'
import type { TSchema } from '@feathersjs/typebox'
import type { Application } from './declarations.js'
import { WEBHOOK_DOCS } from './services/inbox/channels/webhooks.js'
import { errorBody } from './hooks/errors.js'
import { NOT_IDEMPOTENT_PATHS } from './hooks/idempotency.js'
import { JSON_RPC_SCHEMAS, MCP_PATH_DOCS } from './mcp/openapi.js'
import { jwtLoginSchema, localLoginSchema } from './authentication.schema.js'
import { OR_DESCRIPTION, customFieldFilterParameter, exampleOf, keysetPageOf, pageOf, plain, queryParameters } from './openapi-schemas.js'
import { SECURITY_SCHEMES, orderedTags } from './openapi-tags.js'
import { ERROR_RESPONSES, RATE_LIMIT_HEADERS, errorCodes, errorExample, json, rateLimitHeaderRefs, ref } from './openapi-errors.js'

/** What a custom method (POST with X-Service-Method) declares about itself for the OpenAPI document. */
export interface CustomMethodDocs {
  data: TSchema
  result?: TSchema
  /** One line in the resource's words, e.g. 'Search contacts by name, e-mail or phone'; default: the method's name and the resource. */
  summary?: string
  description?: string
  /** Called on one record (POST /<path>/:id with X-Service-Method) rather than on the collection. */
  byId?: boolean
  /** Its success status when not 200. */
  status?: number
  /** Also reached by PATCH /<path> with the header (batch update and delete). */
  patch?: boolean
  /** Error answers of this method the standard wording does not say: what each means here, and an error it throws as the example. */
  errors?: Partial<Record<ErrorCode, { description: string; example: FeathersError }>>
}

/** What a service registration declares about itself for the OpenAPI document. */
export interface ServiceDocs {
  description?: string
  /** How the resource names one record and many; default: the words of the result schema's $id, and their plural. */
  noun?: { one: string; many?: string }
  /** The summary of a service that is an operation rather than records (default: the description's first sentence). */
  summary?: string
  /** Routes without credentials (public booking): no 401/403, rate limited per client address. */
  public?: boolean
  /**
   * Methods of an otherwise authenticated service that are reached without credentials, by name:
   * 'none' takes none (sign-up, a link's token), 'optional' answers with or without them (an
   * invitation's token, or the invitee signed in); `errors` says what an error answer means there.
   */
  access?: Record<string, { credentials: 'none' | 'optional'; errors?: Partial<Record<ErrorCode, string>> }>
  /** The path parameter of get/patch/remove when it is not the integer id (e.g. a slug). */
  id?: { name: string; schema: Record<string, unknown>; description?: string }
  /**
   * result, data, patch and query schemas, and one CustomMethodDocs per custom method (multiPatch for
   * PATCH without id); createMany: create also takes an array of up to maxItems records (batch writes).
   */
  schemas: Record<string, TSchema | CustomMethodDocs | { maxItems: number }>
  /** Adds hand-written operations (completed with the standard error answers and examples like the generated ones). */
  paths?: Record<string, unknown>
  /** Media type of the create body when it is not JSON, e.g. 'multipart/form-data' for uploads. */
  createContentType?: string
  /** What an error answer means here when the standard wording does not say it (e.g. 409 on a booking). */
  errors?: Partial<Record<ErrorCode, string>>
  /** The list filters on custom fields by name (custom_fields_by_name.<name>). */
  customFieldFilters?: boolean
  /** The list answers CSV too (Accept: text/csv, docs/import-export.md). */
  csvList?: boolean
  /** What a read by id answers as CSV (Accept: text/csv), when it does. */
  csvRecord?: string
}

/** A CSV answer beside the JSON one, in a response's content. */
const withCsv = (response: { content: Record<string, unknown> }, description: string) => ({
  ...response,
  content: { ...response.content, 'text/csv': { schema: { type: 'string', description } } }
})
const CSV_LIST = 'with Accept: text/csv, every record the filters, $sort and $select select (no paging; $limit caps the rows): a header row, custom fields one column each by name, ' +
  'related records by name (company_name, owner_name), timestamps ISO 8601 UTC, decimals as text, cells that would start a formula prefixed with a quote (docs/import-export.md)'

type ErrorCode = 400 | 403 | 404 | 409 | 429

const STANDARD = new Set(['find', 'get', 'create', 'patch', 'remove', 'update'])
const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const

/** Every POST and PATCH takes an Idempotency-Key (docs/integrations.md, "Idempotent requests"). */
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  description: 'Makes a retry safe: the first request with a key runs and its answer is stored for IDEMPOTENCY_TTL_S (24 h); a repeat by the same caller gets that answer with Idempotent-Replayed: true and writes nothing. ' +
    'A key belongs to its caller (the API key, the person, the web-chat visitor); without credentials it must have at least 32 characters. ' +
    'An answer holding a secret shown once (a new API key, a webhook secret, an invitation or manage token) is not kept: its repeat is a 409.'
}
// A function: the error examples below are defined further down.
const idempotencyResponses = () => ({
  409: { description: 'A request with the same Idempotency-Key is still running, or succeeded with an answer holding a secret shown once (not replayed)', ...json(ref('schemas', 'Error'), errorExample('Conflict', 409, 'conflict', 'A request with this Idempotency-Key is still running; retry once it has answered')) },
  422: {
    description: 'The Idempotency-Key was used for another method, path or body (errors.idempotency_key)',
    ...json(ref('schemas', 'Error'), errorExample('Unprocessable', 422, 'unprocessable', 'This Idempotency-Key was already used for a different request', { errors: { idempotency_key: 'was already used with another method, path or body; send a new key for a new request' } }))
  }
})
const replayedHeader = { 'Idempotent-Replayed': { description: "'true' when the answer is the stored one of an earlier request with the same Idempotency-Key", schema: { type: 'string', enum: ['true'] } } }

/** Adds the Idempotency-Key header, its answers and the Idempotent-Replayed response header to every POST and PATCH. */
function withIdempotencyKeys(paths: Record<string, any>) {
  for (const [location, item] of Object.entries(paths)) {
    if (NOT_IDEMPOTENT_PATHS.has(location)) continue
    for (const method of ['post', 'patch']) {
      const operation = item?.[method]
      if (!operation) continue
      operation.parameters = [...(operation.parameters ?? []), idempotencyKey]
      for (const [status, response] of Object.entries(operation.responses ?? {}) as [string, any][]) {
        if (status.startsWith('2')) operation.responses[status] = { ...response, headers: { ...response.headers, ...replayedHeader } }
      }
      operation.responses = { ...idempotencyResponses(), ...operation.responses }
    }
  }
  return paths
}


function collectSchema(components: Record<string, unknown>, schema: any) {
  const body = plain(schema)
  if (body.$id) {
    const { $id, ...rest } = body
    components[$id] = rest
    return ref('schemas', $id)
  }
  return body
}

// ---------------------------------------------------------------------------------------------
// Operations of a service, from its registration

const words = (id: string) => id.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().replace(/\b(ai|api)\b/g, (word) => word.toUpperCase())
const plural = (one: string) => (/[^aeiou]y$/.test(one) ? `${one.slice(0, -1)}ies` : /(s|x|ch|sh)$/.test(one) ? `${one}es` : `${one}s`)
const article = (one: string) => (/^([aeioAEIO]|u(?!s|ni)|[FHLMNRSX][A-Z])/.test(one) ? 'an' : 'a')
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
/** The first sentence of a description, as a summary. */
const firstSentence = (text = '') => text.split(/(?<=[a-z)])[.;:](\s|$)/)[0].trim()

/** The nouns of a resource in summaries: "List contacts", "Create a contact". */
function nounsOf(docs: ServiceDocs, location: string) {
  const resultId = (docs.schemas.result as any)?.$id as string | undefined
  const one = docs.noun?.one ?? (resultId ? words(resultId) : location.replace(/[-/]/g, ' '))
  return { one, many: docs.noun?.many ?? plural(one) }
}

/** Whether a find answers the result schema itself (it carries its own data list) rather than a page of results. */
const answersItself = (result: any) => plain(result)?.properties?.data?.type === 'array'

/** The operations of one registered service: CRUD by its methods, one per custom method, all derived from its schemas. */
function serviceOperations(app: Application, location: string, options: any, components: Record<string, unknown>) {
  const docs: ServiceDocs = options.docs
  const { result, data, patch, query, multiPatch, createMany, ...custom } = docs.schemas as Record<string, any>
  const methods: string[] = options.methods ?? []
  const tag = location
  const { one, many } = nounsOf(docs, location)
  const operationSummary = docs.summary ?? firstSentence(docs.description)
  const isOperation = options.registeredAs === 'tenant-operation' || (!methods.includes('get') && methods.length === 1)
  const refusesApiKeys = (method: string) => options.refusesApiKeys === true || (Array.isArray(options.refusesApiKeys) && options.refusesApiKeys.includes(method))
  // An empty requirement ({}) among the others makes credentials optional (OpenAPI 3.1).
  const securityOf = (method: string) => {
    const credentials = docs.public ? 'none' : docs.access?.[method]?.credentials
    if (credentials === 'none') return { security: [] }
    if (credentials === 'optional') return { security: [{}, ...(refusesApiKeys(method) ? [] : [{ apiKey: [] }]), { bearer: [] }] }
    return {}
  }
  const base = `/${location.replace(/:(\w+)/g, '{$1}')}`
  const routeParams = [...location.matchAll(/:(\w+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } }))
  const id = docs.id ?? { name: 'id', schema: { type: 'integer', minimum: 1 } }
  const item = `${base}/{${id.name}}`
  const idParams = [...routeParams, { name: id.name, in: 'path', required: true, schema: id.schema, ...(id.description ? { description: id.description } : {}) }]
  const resultRef = result ? collectSchema(components, result) : { type: 'object' }
  const operationId = (method: string) => `${method}_${location.replace(/[^A-Za-z0-9]+/g, '_')}`
  const methodOf = new Map<string, string>()
  const common = (method: string) => {
    methodOf.set(operationId(method), method)
    return { tags: [tag], operationId: operationId(method), ...securityOf(method) }
  }
  const paths: Record<string, Record<string, any>> = {}
  const described = (errors: Partial<Record<ErrorCode, string>> = {}) => Object.fromEntries(Object.entries(errors).map(([code, description]) => [code, { description }]))
  const add = (key: string, verb: string, operation: Record<string, any>) => {
    const method = methodOf.get(operation.operationId) ?? ''
    operation.responses = { ...operation.responses, ...described(docs.errors), ...described(docs.access?.[method]?.errors) }
    paths[key] = { ...(paths[key] ?? {}), [verb]: operation }
  }

  if (methods.includes('find')) {
    const or = plain(query)?.properties?.$or
    add(base, 'get', {
      ...common('find'), summary: isOperation ? operationSummary : `List ${many}`,
      description: [docs.description, or ? OR_DESCRIPTION(or.maxItems) : undefined].filter(Boolean).join(' ') || undefined,
      parameters: [
        ...routeParams,
        ...(query ? queryParameters(query, app.get('paginate')?.default ?? 10) : []),
        ...(docs.customFieldFilters ? [customFieldFilterParameter] : [])
      ],
      responses: {
        200: (() => {
          const page = { description: isOperation ? 'The answer' : `A page of ${many}`, ...json(answersItself(result) ? resultRef : plain(query)?.properties?.$after ? keysetPageOf(resultRef) : pageOf(resultRef)) }
          return docs.csvList ? withCsv(page, CSV_LIST) : page
        })()
      }
    })
  }
  if (methods.includes('create')) {
    add(base, 'post', {
      ...common('create'),
      summary: isOperation ? operationSummary : createMany ? `Create ${article(one)} ${one}, or up to ${createMany.maxItems} at once` : `Create ${article(one)} ${one}`,
      description: [docs.description, createMany ? 'An array body creates every record or none; the errors of invalid records are keyed by index (errors["3"].email).' : undefined].filter(Boolean).join(' ') || undefined,
      parameters: routeParams,
      requestBody: data ? { required: true, content: { [docs.createContentType ?? 'application/json']: { schema: createBody(components, data, createMany) } } } : undefined,
      responses: {
        201: {
          description: isOperation ? 'Done' : createMany ? `The new ${one}, or the new ${many} in input order` : `The new ${one}`,
          ...json(createMany ? { oneOf: [resultRef, { type: 'array', items: resultRef }] } : resultRef)
        }
      }
    })
  }
  if (methods.includes('patch') && multiPatch) {
    add(base, 'patch', {
      ...common('patchMany'), summary: multiPatch.summary ?? `Change several ${many} at once`, description: multiPatch.description,
      parameters: routeParams,
      requestBody: { required: true, ...json(collectSchema(components, multiPatch.data)) },
      responses: { 200: { description: 'Result', ...json(multiPatch.result ? collectSchema(components, multiPatch.result) : { type: 'object' }) } }
    })
  }
  for (const method of methods.filter((m) => !STANDARD.has(m))) {
    const spec: Partial<CustomMethodDocs> = custom[method] ?? {}
    // OpenAPI allows one POST per path; a custom method is listed under a fragment of its path
    // (a client sending to it sends to the path itself: fragments never leave the client).
    const operation = {
      ...common(method),
      summary: spec.summary ?? `${capitalized(words(method).replace(/-/g, ' '))} ${spec.byId ? `${article(one)} ${one}` : many}`,
      description: [spec.description, `POST ${spec.byId ? item : base} with the header X-Service-Method: ${method}.`].filter(Boolean).join(' '),
      parameters: [
        ...(spec.byId ? idParams : routeParams),
        { name: 'X-Service-Method', in: 'header', required: true, schema: { type: 'string', enum: [method] }, example: method, description: 'selects the custom method' }
      ],
      requestBody: spec.data ? { required: true, ...json(collectSchema(components, spec.data)) } : undefined,
      responses: {
        [spec.status ?? 200]: { description: 'Result', ...json(spec.result ? collectSchema(components, spec.result) : { type: 'object' }) },
        ...(spec.patch ? { 404: { description: 'An id is not a live record of the organization: nothing changed' } } : {}),
        ...Object.fromEntries(Object.entries(spec.errors ?? {}).map(([code, { description, example }]) => [code, { description, ...json(ref('schemas', 'Error'), errorBody(example)) }]))
      }
    }
    add(`${spec.byId ? item : base}#${method}`, 'post', operation)
    // Batch update and delete are also reached by PATCH /<path> with the header.
    if (spec.patch) add(`${base}#${method}`, 'patch', { ...operation, operationId: `${operation.operationId}_patch` })
  }
  if (methods.includes('get')) {
    const record = { description: `The ${one}`, ...json(resultRef) }
    add(item, 'get', { ...common('get'), summary: `Get ${article(one)} ${one}`, parameters: idParams, responses: { 200: docs.csvRecord ? withCsv(record, docs.csvRecord) : record } })
  }
  if (methods.includes('patch')) {
    add(item, 'patch', {
      ...common('patch'), summary: `Change ${article(one)} ${one}`, parameters: idParams,
      requestBody: patch ? { required: true, ...json(collectSchema(components, patch)) } : undefined,
      responses: { 200: { description: `The changed ${one}`, ...json(resultRef) } }
    })
  }
  if (methods.includes('remove')) {
    add(item, 'delete', {
      ...common('remove'), summary: `Delete ${article(one)} ${one}`, parameters: idParams,
      responses: { 200: { description: `The deleted ${one} (soft delete: deleted_at set)`, ...json(resultRef) } }
    })
  }
  return paths
}

/**
 * Completes an operation with what every operation of the API carries: its error answers (the
 * spec's error body, a field map on 400, RateLimit headers on 429), the RateLimit headers of its
 * success answers, and examples of its body and answers derived from their schemas.
 */
function completeOperation(pathKey: string, method: string, operation: any, components: Record<string, any>) {
  const responses = (operation.responses ??= {})
  // The standard answers, and any the operation declares itself (a 403 on a public sign-up).
  const declared = Object.keys(responses).map(Number).filter((code) => ERROR_RESPONSES[code])
  for (const code of new Set([...errorCodes(pathKey, method, operation), ...declared])) {
    const own = responses[code]
    responses[code] = own ? { ...ERROR_RESPONSES[code].body, ...own, content: own.content ?? (ERROR_RESPONSES[code].body as any).content } : ref('responses', ERROR_RESPONSES[code].name)
    if (code === 429 && own) responses[code].headers = (ERROR_RESPONSES[429].body as any).headers
  }
  for (const [code, response] of Object.entries<any>(responses)) {
    if (!code.startsWith('2') || response.$ref) continue
    response.headers = { ...rateLimitHeaderRefs, ...response.headers }
    const media = response.content?.['application/json']
    if (media?.schema && media.example === undefined) media.example = exampleOf(media.schema, components, true)
  }
  for (const media of Object.values<any>(operation.requestBody?.content ?? {})) {
    if (media.schema && media.example === undefined) media.example = exampleOf(media.schema, components, false)
  }
  if (operation.requestBody === undefined) delete operation.requestBody
  if (operation.description === undefined) delete operation.description
}

// ---------------------------------------------------------------------------------------------
// The routes that are not services


/** The create body: one record, or also an array of them (createMany: {maxItems}) where the service takes batches. */
function createBody(components: Record<string, unknown>, data: TSchema, createMany?: { maxItems: number }) {
  const one = collectSchema(components, data)
  return createMany ? { oneOf: [one, { type: 'array', items: one, minItems: 1, maxItems: createMany.maxItems }] } : one
}

/** POST /authentication (the Feathers authentication service): log in for a JWT. Its bodies are the validated schemas. */
const authenticationPath = (components: Record<string, unknown>) => ({
  post: {
    tags: ['authentication'],
    operationId: 'create_authentication',
    summary: 'Log in: e-mail and password (strategy local) for a JWT, or renew with a JWT (strategy jwt)',
    security: [],
    requestBody: {
      required: true,
      ...json({
        oneOf: [collectSchema(components, localLoginSchema), collectSchema(components, jwtLoginSchema)]
      }, { strategy: 'local', email: 'ada@example.com', password: 'correct horse battery' })
    },
    responses: {
      201: {
        description: 'The JWT (send it as Authorization: Bearer <accessToken>) and the user',
        ...json(
          { type: 'object', properties: { accessToken: { type: 'string' }, authentication: { type: 'object' }, user: { type: 'object' } } },
          { accessToken: 'eyJhbGciOiJIUzI1NiJ9.e30.signature', authentication: { strategy: 'local' }, user: { id: 1, email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' } }
        )
      },
      400: ref('responses', 'BadRequest'),
      401: { description: 'Wrong e-mail or password, or an invalid token', ...json(ref('schemas', 'Error'), errorExample('NotAuthenticated', 401, 'not-authenticated', 'Invalid login')) },
      429: ref('responses', 'TooManyRequests')
    }
  }
})

const healthPath = {
  get: {
    tags: ['health'],
    operationId: 'get_health',
    summary: 'Liveness and database check',
    security: [],
    responses: {
      200: { description: 'The service and its database answer', ...json({ type: 'object', properties: { status: { type: 'string', enum: ['ok'] } } }, { status: 'ok' }) },
      503: { description: 'The database does not answer', ...json({ type: 'object', properties: { status: { type: 'string', enum: ['unavailable'] } } }, { status: 'unavailable' }) }
    }
  }
}

export function openApiDocument(app: Application) {
  const components: Record<string, any> = {
    Error: {
      type: 'object',
      required: ['name', 'message', 'code', 'className'],
      properties: {
        name: { type: 'string' }, message: { type: 'string' }, code: { type: 'integer' }, className: { type: 'string' },
        errors: {
          type: 'object',
          description: 'field name → what is wrong with it; a write of many records (an array create, an upsert, a batch update) keys each invalid record\'s fields by its index in the body: {"3": {"email": "must be an e-mail address"}}',
          additionalProperties: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: { type: 'string' } }] },
          examples: [{ email: 'must be an e-mail address' }, { 3: { email: 'must be an e-mail address' }, 7: { company_id: 'must be a company of this organization' } }]
        },
        data: { type: 'object' }
      }
    },
    ...JSON_RPC_SCHEMAS
  }
  // Routes that are Koa middleware rather than services (the channels' provider webhooks) bring their own operations.
  const paths: Record<string, any> = { ...WEBHOOK_DOCS }
  for (const [location, service] of Object.entries(app.services)) {
    const options = feathersCore.getServiceOptions(service) as any
    if (!options?.docs) continue
    const generated = options.docs.paths ?? serviceOperations(app, location, options, components)
    for (const [key, item] of Object.entries<any>(generated)) paths[key] = { ...(paths[key] ?? {}), ...item }
  }
  for (const [key, item] of Object.entries<any>(paths)) {
    for (const method of HTTP_METHODS) if (item[method]) completeOperation(key, method, item[method], components)
  }
  const allPaths = withIdempotencyKeys({ '/health': healthPath, '/authentication': authenticationPath(components), '/mcp': MCP_PATH_DOCS, ...paths })
  return escapeAngleBrackets({
    openapi: '3.1.0',
    info: {
      title: 'CRM API',
      version: '1.0.0',
      description:
        'Multi-tenant customer-relationship API. Authenticate with x-api-key or Authorization: Bearer <JWT>. List filters go in the query string or in a JSON body {"query": {...}} of the GET. ' +
        'A custom method is a POST to its path with the header X-Service-Method; the document lists it under <path>#<method>.'
    },
    servers: [{ url: app.get('publicUrl') }],
    components: {
      schemas: components,
      responses: Object.fromEntries(Object.values(ERROR_RESPONSES).map(({ name, body }) => [name, body])),
      headers: RATE_LIMIT_HEADERS,
      securitySchemes: SECURITY_SCHEMES
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    tags: orderedTags(tagsOf(allPaths)),
    paths: allPaths
  })
}

/** Every tag the operations use, in the order they first appear. */
const tagsOf = (paths: Record<string, any>) =>
  [...new Set(Object.values(paths).flatMap((item) => HTTP_METHODS.flatMap((method) => item[method]?.tags ?? [])))] as string[]

// Values, not prose: an example's text stays as the API sends it.
const VALUE_KEYS = new Set(['example', 'examples', 'default', 'const', 'enum'])

/**
 * Descriptions are CommonMark (OpenAPI 3.1), where `<JWT>` or `<path>` is an HTML tag that a
 * reader such as Swagger UI drops: every < and > of a description outside a `code span` is
 * escaped, so placeholders written as words in angle brackets show as written. The document is
 * copied, not changed: its parts are shared constants.
 */
function escapeAngleBrackets(node: unknown, key?: string): any {
  if (key !== undefined && VALUE_KEYS.has(key)) return node
  if (typeof node === 'string') return key === 'description' ? escapeOutsideCode(node) : node
  if (Array.isArray(node)) return node.map((item) => escapeAngleBrackets(item))
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([name, value]) => [name, escapeAngleBrackets(value, name)]))
  return node
}

const escapeOutsideCode = (text: string) =>
  text.split(/(`[^`]*`)/).map((part) => (part.startsWith('`') ? part : part.replace(/[<>]/g, '\\$&'))).join('')

const DOCS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>CRM API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', filter: true })</script>
</body></html>`

/** GET /openapi.json, and a browsable /docs page from the swagger-ui-dist package (no CDN). */
export const openApi = (app: Application) => {
  const require = createRequire(import.meta.url)
  const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'))
  const serveAssets = serveStatic(assets, { index: false })
  let document: unknown
  app.use(async (ctx: Context, next: Next) => {
    if (ctx.method !== 'GET') return next()
    if (ctx.path === '/openapi.json') {
      document ??= openApiDocument(app)
      ctx.body = document
      return
    }
    if (ctx.path === '/docs' || ctx.path === '/docs/') {
      ctx.type = 'html'
      ctx.body = DOCS_PAGE
      return
    }
    if (ctx.path.startsWith('/docs/')) {
      const original = ctx.path
      ctx.path = original.slice('/docs'.length)
      await serveAssets(ctx, async () => undefined)
      if (ctx.body === undefined) ctx.path = original
      else return
    }
    return next()
  })
}
