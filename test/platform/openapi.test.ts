import { execFile } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import feathersCore from '@feathersjs/feathers'
import { Ajv, addFormats } from '@feathersjs/schema'
import SwaggerParser from '@apidevtools/swagger-parser'
import openapiTS, { astToString } from 'openapi-typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

const STANDARD = new Set(['find', 'get', 'create', 'patch', 'remove', 'update'])
const VERBS = ['get', 'post', 'put', 'patch', 'delete']

/** Every operation of the document: [path, verb, operation]. */
const operationsOf = (document: any): [string, string, any][] =>
  Object.entries<any>(document.paths).flatMap(([key, item]) => VERBS.filter((verb) => item[verb]).map((verb) => [key, verb, item[verb]] as [string, string, any]))

/** The path of a service in the document: /public/booking-links/:slug/slots → /public/booking-links/{slug}/slots. */
const documentPath = (location: string) => `/${location.replace(/:(\w+)/g, '{$1}')}`

// The document as the running application serves it: every registered service is walked, so a
// service added later is checked the moment it is registered.
describe('the OpenAPI document (/openapi.json)', () => {
  let t: TestApp
  let acme: Tenant
  let document: any
  let resolved: any
  let services: [string, any][]
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t)
    const res = await t.http().get('/openapi.json')
    expect(res.status).toBe(200)
    document = res.body
    resolved = await SwaggerParser.dereference(structuredClone(document))
    services = Object.entries(t.app.services)
      .filter(([location]) => location !== 'authentication')
      .map(([location, service]) => [location, feathersCore.getServiceOptions(service)])
  })
  afterAll(async () => {
    await t.close()
  })

  it('when a standard validator reads it, then it is valid OpenAPI 3.1 with zero errors', async () => {
    expect(document.openapi).toBe('3.1.0')
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeTruthy()
  })

  it('when Swagger UI reads it, then it uses the default JSON Schema dialect (no jsonSchemaDialect warning)', () => {
    expect(document.jsonSchemaDialect ?? 'https://spec.openapis.org/oas/3.1/dialect/base').toBe('https://spec.openapis.org/oas/3.1/dialect/base')
  })

  it('when a description is rendered as CommonMark, then its < and > are escaped outside code spans, so placeholders like <JWT> stay visible; examples stay as written', () => {
    const unescaped: string[] = []
    let escaped = 0
    const walk = (node: unknown, where: string, key?: string) => {
      if (key && ['example', 'examples', 'default', 'const', 'enum'].includes(key)) return
      if (typeof node === 'string' && key === 'description') {
        const prose = node.split(/`[^`]*`/).join('')
        if (/(^|[^\\])[<>]/.test(prose)) unescaped.push(`${where}: ${node}`)
        if (/\\</.test(prose)) escaped++
      } else if (node && typeof node === 'object') {
        for (const [name, value] of Object.entries(node)) walk(value, `${where}/${name}`, Array.isArray(node) ? undefined : name)
      }
    }
    walk(document, '#')
    expect(unescaped).toEqual([])
    expect(escaped).toBeGreaterThan(3)
    expect(document.info.description).toContain('Authorization: Bearer \\<JWT\\>')
    expect(document.info.description).toContain('\\<path\\>#\\<method\\>')
    expect(document.components.headers['RateLimit-Policy'].description).toBe('\\<limit\\>;w=\\<window seconds\\>')
  })

  it('when every registered service is looked up, then each of its methods has an operation, custom methods under <path>#<method> with their X-Service-Method header', () => {
    expect(services.length).toBeGreaterThan(40)
    for (const [location, options] of services) {
      const base = documentPath(location)
      const methods: string[] = options?.methods ?? []
      const itemPath = Object.keys(document.paths).find((key) => key.startsWith(`${base}/{`) && !key.includes('#') && key.split('/').length === base.split('/').length + 1)
      for (const method of methods) {
        const where = `${location} ${method}`
        if (method === 'find') expect(document.paths[base]?.get, where).toBeDefined()
        else if (method === 'create') expect(document.paths[base]?.post, where).toBeDefined()
        else if (method === 'get') expect(itemPath && document.paths[itemPath].get, where).toBeTruthy()
        else if (method === 'patch') expect(itemPath && document.paths[itemPath].patch, where).toBeTruthy()
        else if (method === 'remove') expect(itemPath && document.paths[itemPath].delete, where).toBeTruthy()
        else if (!STANDARD.has(method)) {
          const key = Object.keys(document.paths).find((candidate) => candidate.startsWith(base) && candidate.endsWith(`#${method}`))
          expect(key, where).toBeDefined()
          const header = document.paths[key!].post.parameters.find((p: any) => p.name === 'X-Service-Method')
          expect(header, where).toMatchObject({ in: 'header', required: true, schema: { enum: [method] } })
        }
      }
    }
  })

  it('when every operation is read, then it has a summary in the resource\'s words, an example, and its error answers with the spec\'s error body', () => {
    const operations = operationsOf(resolved)
    expect(operations.length).toBeGreaterThan(150)
    for (const [key, verb, operation] of operations) {
      const where = `${verb.toUpperCase()} ${key}`
      expect(operation.summary, where).toMatch(/^[A-Z]/)
      expect(operation.summary, where).not.toMatch(/one of|Create one|organizations-users|reservation-[a-z]+-[a-z]+/)
      const location = key.split('#')[0].split('/{')[0].slice(1)
      if (location.includes('-')) expect(operation.summary, where).not.toContain(location)

      const requestExample = Object.values<any>(operation.requestBody?.content ?? {}).some((media) => media.example !== undefined)
      const answerExample = Object.entries<any>(operation.responses).some(([code, response]) =>
        code.startsWith('2') && Object.values<any>(response.content ?? {}).some((media) => media.example !== undefined))
      expect(requestExample || answerExample, `${where} has an example`).toBe(true)
      if (key === '/health' || key === '/authentication' || key === '/mcp') continue

      const isPublic = Array.isArray(operation.security) && operation.security.length === 0
      const expected = [400, ...(isPublic ? [] : [401, 403]), ...(key.includes('{') ? [404] : []), ...(['post', 'patch', 'delete'].includes(verb) ? [409] : []), 429, 503]
      for (const code of expected) {
        const answer = operation.responses[code]
        expect(answer, `${where} answers ${code}`).toBeDefined()
        expect(answer.content['application/json'].schema.required, `${where} ${code}`).toEqual(['name', 'message', 'code', 'className'])
        expect(answer.content['application/json'].example.code, `${where} ${code}`).toBe(code)
      }
      expect(operation.responses[400].content['application/json'].example.errors).toEqual(expect.any(Object))
      expect(Object.keys(operation.responses[429].headers).sort()).toEqual(['RateLimit-Limit', 'RateLimit-Policy', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'])
      expect(Object.keys(operation.responses[503].headers), where).toEqual(['Retry-After'])
      const success = Object.entries<any>(operation.responses).find(([code]) => code.startsWith('2'))![1]
      expect(Object.keys(success.headers ?? {}), where).toEqual(expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']))
    }
  })

  it('when the request examples are checked against their own schemas, then each is valid', () => {
    const ajv = addFormats(new Ajv({ allErrors: true, strict: false }), ['date-time', 'time', 'date', 'email', 'uri'])
    let checked = 0
    for (const [key, verb, operation] of operationsOf(resolved)) {
      const media = operation.requestBody?.content?.['application/json']
      if (!media?.schema) continue
      const validate = ajv.compile(media.schema)
      expect(validate(media.example), `${verb.toUpperCase()} ${key}: ${JSON.stringify(media.example)} ${JSON.stringify(validate.errors)}`).toBe(true)
      checked++
    }
    expect(checked).toBeGreaterThan(50)
  })

  it('when the sections are read, then the CRM records come first (contacts, companies, deals) and the MCP server, the providers\' webhooks and the health check last, every tag of an operation has its section, and two schemes sign requests, each saying who uses it', () => {
    const names = document.tags.map((tag: { name: string }) => tag.name)
    expect(names.slice(0, 3)).toEqual(['contacts', 'companies', 'deals'])
    expect(names.slice(-3)).toEqual(['mcp', 'channel webhooks', 'health'])
    expect(names.indexOf('conversations')).toBeLessThan(names.indexOf('users'))
    const used = new Set(Object.values<any>(document.paths).flatMap((item) => Object.values<any>(item).flatMap((operation) => operation?.tags ?? [])))
    expect(new Set(names)).toEqual(used)
    expect(Object.keys(document.components.securitySchemes)).toEqual(['apiKey', 'bearer'])
    expect(document.components.securitySchemes.apiKey.description).toMatch(/^For integrations and scripts/)
    expect(document.components.securitySchemes.bearer.description).toMatch(/^For people and the apps they sign in to/)
    expect(document.paths['/mcp'].post.security).toEqual([{ apiKey: [] }, { bearer: [] }])
  })

  it('when a list is read, then its filters are query parameters; the public routes carry no credentials; /mcp names its headers', () => {
    const names = document.paths['/contacts'].get.parameters.map((p: any) => p.name)
    expect(names).toEqual(expect.arrayContaining(['organization_id', 'first_name', 'email', 'company_id', '$limit', '$skip', '$sort']))
    const slots = document.paths['/reservation-available-slots'].get.parameters
    expect(slots.filter((p: any) => p.required).map((p: any) => p.name).sort()).toEqual(['date', 'service_id'])
    for (const key of ['/public/booking-links/{slug}', '/public/booking-links/{slug}/slots', '/public/booking-links/{slug}/reservations', '/public/reservations/{token}/cancel']) {
      const operation = Object.values<any>(document.paths[key])[0]
      expect(operation.security, key).toEqual([])
      expect(operation.responses[401], key).toBeUndefined()
    }
    expect(document.paths['/public/booking-links/{slug}/reservations'].post.responses[409].description).toBe('The time is not (or no longer) available')
    expect(document.paths['/mcp'].post.parameters.map((p: any) => p.name)).toEqual(['X-Assistant-Id'])
  })

  it('when an operation works without credentials (sign-up, e-mail verification, an invitation\'s token), then it says so: no requirement, or an optional one', () => {
    for (const [key, verb] of [['/users', 'post'], ['/users#verifyEmail', 'post']]) {
      const operation = document.paths[key][verb]
      expect(operation.security, key).toEqual([])
      expect(operation.responses[401], key).toBeUndefined()
    }
    expect(resolved.paths['/users'].post.responses[403]).toMatchObject({ description: expect.stringContaining('SIGNUP_ENABLED'), content: { 'application/json': { schema: { required: ['name', 'message', 'code', 'className'] } } } })
    expect(document.paths['/users'].get.security).toBeUndefined()
    expect(document.paths['/organizations-users-invites'].get.security).toEqual([{}, { apiKey: [] }, { bearer: [] }])
    // Acceptance: the token alone, or the invitee signed in; an API key is refused.
    expect(document.paths['/organizations-users-invites/{id}'].patch.security).toEqual([{}, { bearer: [] }])
    expect(document.paths['/organizations-users-invites/{id}'].delete.security).toBeUndefined()
  })

  it('when a batch write answers 400, then its errors keyed by record index match the document\'s Error schema', async () => {
    const ajv = new Ajv({ strict: false })
    const validate = ajv.compile(resolved.components.schemas.Error)
    const res = await t.http().post('/contacts').set(acme.key).send([{ first_name: 'Ada' }, { first_name: 'Bea', email: 'not-an-email' }])
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ 1: { email: 'must be an e-mail address' } })
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true)
    const single = await t.http().post('/contacts').set(acme.key).send({ first_name: 'Bea', email: 'not-an-email' })
    expect(validate(single.body), JSON.stringify(validate.errors)).toBe(true)
  })

  it('when /mcp answers a malformed, refused or batched request, then the document declares that status and the answer validates against its schema: JSON-RPC errors from the transport, the API\'s error body before it', async () => {
    const ajv = new Ajv({ strict: false })
    const responses = resolved.paths['/mcp'].post.responses
    const accept = { Accept: 'application/json, text/event-stream' }
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
    const initialize = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })
    const mcp = () => t.http().post('/mcp').set(acme.key)
    const answers: [number, string, any][] = [
      [406, 'no event stream in Accept', await mcp().send(list)],
      [415, 'a text body', await mcp().set(accept).set('Content-Type', 'text/plain').send('hello')],
      [400, 'no JSON-RPC message', await mcp().set(accept).send({ no: 'message' })],
      [400, 'JSON that does not parse', await mcp().set(accept).set('Content-Type', 'application/json').send('{"jsonrpc": ')],
      [400, 'an unsupported protocol version', await mcp().set(accept).set('MCP-Protocol-Version', '1999-01-01').send(list)],
      [400, 'two initializations in one batch', await mcp().set(accept).send([initialize(1), initialize(2)])],
      [400, 'an X-Assistant-Id of no assistant', await mcp().set(accept).set('X-Assistant-Id', 'abc').send(list)],
      [401, 'a JWT instead of a key', await t.http().post('/mcp').set(acme.bearer).set(accept).send(list)],
      [413, 'a body over 1 MB', await mcp().set(accept).send({ ...list, params: { padding: 'x'.repeat(1_100_000) } })],
      [200, 'an unknown method', await mcp().set(accept).send({ jsonrpc: '2.0', id: 1, method: 'no/such-method' })],
      [200, 'a batch of two requests', await mcp().set(accept).send([list, { jsonrpc: '2.0', id: 2, method: 'no/such-method' }])]
    ]
    for (const [status, what, res] of answers) {
      expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(status)
      const declared = responses[status]?.content?.['application/json']?.schema
      expect(declared, `${what}: ${status} is declared`).toBeDefined()
      const validate = ajv.compile(declared)
      expect(validate(res.body), `${what}: ${status} ${res.text.slice(0, 300)} ${JSON.stringify(validate.errors)}`).toBe(true)
    }
    expect(answers[0][2].body).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } })
    expect(answers.at(-1)![2].body).toEqual([expect.objectContaining({ id: 1, result: expect.any(Object) }), expect.objectContaining({ id: 2, error: expect.any(Object) })])
    // A lost database connection while the key is checked is the API's 503, as on every other route.
    expect(responses[503]?.content?.['application/json']?.schema?.required).toEqual(['name', 'message', 'code', 'className'])
  })

  it('when openapi-typescript generates types from it, then a typed call compiles, a wrong body does not, and the compiled call creates a contact', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-openapi-ts-'))
    const server = http.createServer(t.app.callback())
    try {
      fs.writeFileSync(path.join(dir, 'api.d.ts'), astToString(await openapiTS(structuredClone(document))))
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
      fs.writeFileSync(path.join(dir, 'call.ts'), `
import type { paths } from './api'

type JsonBody<P extends keyof paths> = paths[P] extends { post: { requestBody?: { content: { 'application/json': infer B } } } } ? B : never
type Created<P extends keyof paths> = paths[P] extends { post: { responses: { 201: { content: { 'application/json': infer R } } } } } ? R : never

/** POST a JSON body to a path of the API, typed by the generated paths. */
async function create<P extends keyof paths>(base: string, key: string, path: P, body: JsonBody<P>): Promise<Created<P>> {
  const response = await fetch(base + String(path), { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) })
  if (response.status !== 201) throw new Error(String(response.status))
  return (await response.json()) as Created<P>
}

export async function createAda(base: string, key: string): Promise<{ id: number; name: string }> {
  const created = await create(base, key, '/contacts', { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' })
  // POST /contacts also takes an array (batch create): the answer is one contact or an array of them.
  const contact = Array.isArray(created) ? created[0] : created
  const id: number = contact.id
  return { id, name: contact.first_name + ' ' + (contact.last_name ?? '') }
}

// @ts-expect-error a contact has no shoe_size
export const wrongField = (key: string) => create('', key, '/contacts', { first_name: 'Ada', shoe_size: 44 })
// @ts-expect-error first_name is a string
export const wrongType = (key: string) => create('', key, '/contacts', { first_name: 42 })
`)
      const tsc = path.resolve('node_modules/typescript/bin/tsc')
      await promisify(execFile)(process.execPath, [tsc, '--strict', '--target', 'es2022', '--module', 'es2022', '--moduleResolution', 'bundler', '--skipLibCheck', '--outDir', path.join(dir, 'out'), path.join(dir, 'call.ts')], { cwd: dir })
        .catch((error) => { throw new Error(`tsc failed: ${error.stdout}${error.stderr}`) })

      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const { createAda } = await import(path.join(dir, 'out', 'call.js'))
      const made = await createAda(base, acme.apiKey)
      expect(made.name).toBe('Ada Lovelace')
      const stored = await t.http().get(`/contacts/${made.id}`).set(acme.key)
      expect(stored.body).toMatchObject({ id: made.id, first_name: 'Ada', email: 'ada@example.com' })
    } finally {
      await new Promise((resolve) => server.close(resolve))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
