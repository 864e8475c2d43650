import { createRequire } from 'node:module'
import path from 'node:path'
import feathersCore from '@feathersjs/feathers'
import serveStatic from 'koa-static'
import type { Context, Next } from 'koa'
import type { TSchema } from '@feathersjs/typebox'
import type { Application } from './declarations.js'
import { NOT_IDEMPOTENT_PATHS } from './hooks/idempotency.js'

/** What a service registration declares about itself for the OpenAPI document. */
export interface ServiceDocs {
  description?: string
  /** result, data, patch and query schemas, and one {data, result} pair per custom method. */
  schemas: Record<string, TSchema | { data: TSchema; result?: TSchema; description?: string; byId?: boolean }>
  /** Replaces the generated operations of a path, for services that are not plain CRUD. */
  paths?: Record<string, unknown>
  /** Media type of the create body when it is not JSON, e.g. 'multipart/form-data' for uploads. */
  createContentType?: string
}

const STANDARD = new Set(['find', 'get', 'create', 'patch', 'remove', 'update'])
const errorRef = { $ref: '#/components/schemas/Error' }
const errorResponses = {
  400: { description: 'Invalid request; errors maps field names to messages', content: { 'application/json': { schema: errorRef } } },
  401: { description: 'Missing or invalid credentials', content: { 'application/json': { schema: errorRef } } },
  403: { description: 'Not permitted in this organization', content: { 'application/json': { schema: errorRef } } },
  429: { description: 'Rate limit exceeded', content: { 'application/json': { schema: errorRef } } }
}

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })

/** Every POST and PATCH takes an Idempotency-Key (docs/integrations.md, "Idempotent requests"). */
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  description: 'Makes a retry safe: the first request with a key runs and its answer is stored for IDEMPOTENCY_TTL_S (24 h); a repeat gets that answer with Idempotent-Replayed: true and writes nothing.'
}
const idempotencyResponses = {
  409: { description: 'A request with the same Idempotency-Key is still running', ...json(errorRef) },
  422: { description: 'The Idempotency-Key was used for another method, path or body (errors.idempotency_key)', ...json(errorRef) }
}
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
      operation.responses = { ...operation.responses, ...idempotencyResponses }
    }
  }
  return paths
}

/** Removes TypeBox's symbols and turns nested $id schemas into plain ones. */
const plain = (schema: unknown): any => JSON.parse(JSON.stringify(schema ?? {}))

function collectSchema(components: Record<string, unknown>, schema: any) {
  const body = plain(schema)
  if (body.$id) {
    components[body.$id] = { ...body, $id: undefined }
    return { $ref: `#/components/schemas/${body.$id}` }
  }
  return body
}

const isOperatorObject = (schema: any) => schema?.type === 'object' && Object.keys(schema.properties ?? {}).some((key) => key.startsWith('$'))
/** The plain value form of a filter (its operator object and null left out: a query string cannot send them as such). */
const valueForm = (schema: any): any => {
  const forms = (schema.anyOf ?? [schema]).filter((form: any) => !isOperatorObject(form) && form.type !== 'null')
  return forms.length === 1 ? (forms[0].anyOf ? valueForm(forms[0]) : forms[0]) : schema
}

/**
 * The query string as the service reads it (qs): $sort and operator objects nest with brackets,
 * which is OpenAPI's deepObject style, so Swagger UI's "Try it out" sends $sort[first_name]=-1.
 * $limit and $skip are integers with defaults the service accepts.
 */
function queryParameters(query: any, defaultLimit: number) {
  const properties = plain(query).properties ?? {}
  return Object.entries(properties).map(([name, schema]: [string, any]) => {
    if (name === '$limit') return { name, in: 'query', required: false, schema: { ...schema, default: Math.min(defaultLimit, schema.maximum ?? defaultLimit) }, description: 'page size' }
    if (name === '$skip') return { name, in: 'query', required: false, schema: { ...schema, default: 0 }, description: 'rows to skip' }
    if (name === '$sort') {
      const first = Object.keys(schema.properties ?? {}).find((key) => key !== 'organization_id') ?? 'id'
      return {
        name, in: 'query', required: false, style: 'deepObject', explode: true, schema,
        example: { [first]: 1 },
        description: `{field: 1 | -1}, sent as $sort[${first}]=1; ties are broken by id`
      }
    }
    const operators = (schema.anyOf ?? []).find(isOperatorObject)
    const description = operators
      ? `equals; or comparisons in deepObject form: ${name}[$gte]=…, ${name}[$in][]=… (${Object.keys(operators.properties).join(' ')}). Filters may also be sent as {"query": {...}} in the JSON body of the GET.`
      : 'May also be sent as {"query": {...}} in the JSON body of the GET.'
    return { name, in: 'query', required: false, schema: valueForm(schema), description }
  })
}

/** POST /authentication (the Feathers authentication service): log in for a JWT. */
const authenticationPath = {
  post: {
    tags: ['authentication'],
    summary: 'Log in: e-mail and password (strategy local) for a JWT, or renew with a JWT (strategy jwt)',
    security: [],
    requestBody: json({
      oneOf: [
        { type: 'object', required: ['strategy', 'email', 'password'], properties: { strategy: { type: 'string', enum: ['local'] }, email: { type: 'string', format: 'email' }, password: { type: 'string' } } },
        { type: 'object', required: ['strategy', 'accessToken'], properties: { strategy: { type: 'string', enum: ['jwt'] }, accessToken: { type: 'string' } } }
      ],
      example: { strategy: 'local', email: 'ada@example.com', password: 'correct horse battery' }
    }),
    responses: {
      201: {
        description: 'The JWT (send it as Authorization: Bearer <accessToken>) and the user',
        ...json({ type: 'object', properties: { accessToken: { type: 'string' }, authentication: { type: 'object' }, user: { type: 'object' } } })
      },
      401: { description: 'Wrong e-mail or password, or an invalid token', ...json(errorRef) },
      429: { description: 'Too many failed logins', ...json(errorRef) }
    }
  }
}

export function openApiDocument(app: Application) {
  const components: Record<string, unknown> = {
    Error: {
      type: 'object',
      required: ['name', 'message', 'code', 'className'],
      properties: {
        name: { type: 'string' }, message: { type: 'string' }, code: { type: 'integer' }, className: { type: 'string' },
        errors: { type: 'object', additionalProperties: { type: 'string' } },
        data: { type: 'object' }
      }
    }
  }
  const paths: Record<string, any> = {
    '/health': { get: { summary: 'Liveness and database check', security: [], responses: { 200: { description: 'ok' }, 503: { description: 'database unreachable' } } } },
    '/authentication': authenticationPath
  }
  for (const [location, service] of Object.entries(app.services)) {
    const options = feathersCore.getServiceOptions(service) as any
    const docs: ServiceDocs | undefined = options?.docs
    if (!docs) continue
    const tag = location
    if (docs.paths) {
      Object.assign(paths, docs.paths)
      continue
    }
    const { result, data, patch, query, ...custom } = docs.schemas as Record<string, any>
    const resultRef = result ? collectSchema(components, result) : {}
    const collection: Record<string, any> = {}
    const item: Record<string, any> = {}
    const methods: string[] = options.methods ?? []
    const idParam = [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }]
    if (methods.includes('find')) {
      collection.get = {
        tags: [tag], summary: `List ${location}`, description: docs.description,
        parameters: query ? queryParameters(query, app.get('paginate')?.default ?? 10) : [],
        responses: { 200: { description: 'A page', ...json({ type: 'object', properties: { total: { type: 'integer' }, limit: { type: 'integer' }, skip: { type: 'integer' }, data: { type: 'array', items: resultRef } } }) }, ...errorResponses }
      }
    }
    if (methods.includes('create')) {
      collection.post = {
        tags: [tag], summary: `Create one of ${location}`,
        requestBody: data ? { content: { [docs.createContentType ?? 'application/json']: { schema: collectSchema(components, data) } } } : undefined,
        responses: { 201: { description: 'Created', ...json(resultRef) }, ...errorResponses }
      }
    }
    // A service allowing multi patch documents its PATCH /<path> (no id) as schemas.multiPatch.
    if (methods.includes('patch') && custom.multiPatch) {
      const { data: body, result: answer, description } = custom.multiPatch
      collection.patch = {
        tags: [tag], summary: `Change many of ${location}`, description,
        requestBody: json(collectSchema(components, body)),
        responses: { 200: { description: 'Result', ...json(answer ? collectSchema(components, answer) : {}) }, ...errorResponses }
      }
    }
    for (const method of methods.filter((m) => !STANDARD.has(m))) {
      const spec = custom[method] ?? {}
      // A custom method on one record (rotate-secret, redeliver) is sent to /<path>/{id}.
      const target = spec.byId ? `/${location}/{id}` : `/${location}`
      const operation = {
        tags: [tag],
        summary: `${method} (POST ${target} with header X-Service-Method: ${method})`,
        description: spec.description,
        parameters: [...(spec.byId ? idParam : []), { name: 'X-Service-Method', in: 'header', required: true, schema: { type: 'string', enum: [method] } }],
        requestBody: spec.data ? json(collectSchema(components, spec.data)) : undefined,
        responses: {
          200: { description: 'Result', ...json(spec.result ? collectSchema(components, spec.result) : {}) },
          ...(spec.byId ? { 404: { description: 'Not found in your organizations', ...json(errorRef) } } : {}),
          ...errorResponses
        }
      }
      // OpenAPI allows one POST per path; custom methods are listed under a fragment of the path.
      paths[`${target}#${method}`] = { post: operation }
    }
    if (methods.includes('get')) {
      item.get = { tags: [tag], summary: `Get one of ${location}`, parameters: idParam, responses: { 200: { description: 'The record', ...json(resultRef) }, 404: { description: 'Not found in your organizations', ...json(errorRef) }, ...errorResponses } }
    }
    if (methods.includes('patch')) {
      item.patch = { tags: [tag], summary: `Change one of ${location}`, parameters: idParam, requestBody: patch ? json(collectSchema(components, patch)) : undefined, responses: { 200: { description: 'The updated record', ...json(resultRef) }, 404: { description: 'Not found', ...json(errorRef) }, ...errorResponses } }
    }
    if (methods.includes('remove')) {
      item.delete = { tags: [tag], summary: `Delete one of ${location}`, parameters: idParam, responses: { 200: { description: 'The deleted record (soft delete: deleted_at set)', ...json(resultRef) }, 404: { description: 'Not found', ...json(errorRef) }, ...errorResponses } }
    }
    if (Object.keys(collection).length) paths[`/${location}`] = { ...(paths[`/${location}`] ?? {}), ...collection }
    if (Object.keys(item).length) paths[`/${location}/{id}`] = item
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'CRM API',
      version: '1.0.0',
      description: 'Multi-tenant customer-relationship API. Authenticate with x-api-key or Authorization: Bearer <JWT>. List filters go in the query string or in a JSON body {"query": {...}} of the GET.'
    },
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }
      }
    },
    security: [{ apiKey: [] }, { bearer: [] }],
    paths: withIdempotencyKeys(paths)
  }
}

const DOCS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>CRM API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' })</script>
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
