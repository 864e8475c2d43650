import feathersCore from '@feathersjs/feathers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

interface Parameter {
  name: string
  in: string
  style?: string
  explode?: boolean
  example?: unknown
  examples?: Record<string, unknown>
  schema: { type?: string | string[]; default?: unknown; example?: unknown; items?: { type?: string | string[] } }
}

const GENERATED = Symbol('a sample Swagger UI makes up from the schema')
const hasType = (schema: { type?: string | string[] } | undefined, type: string) => [schema?.type].flat().includes(type)

/**
 * What Swagger UI's "Try it out" puts in a parameter's field before anything is typed (its
 * ParameterRow.setDefaultValue): the parameter's example, else the schema's example or default;
 * an object, or a list of objects, without any of them gets a sample generated from its schema.
 */
function prefilled(parameter: Parameter): unknown {
  const given = parameter.example ?? parameter.schema.example ?? parameter.schema.default
  if (given !== undefined || parameter.examples) return given
  const objects = hasType(parameter.schema, 'object') || (hasType(parameter.schema, 'array') && hasType(parameter.schema.items, 'object'))
  return objects ? GENERATED : undefined
}

/**
 * The query string Swagger UI's "Try it out" builds from the document: the values typed in, else
 * what the form filled in; deepObject parameters as name[key]=value, the rest as name=value.
 */
function swaggerQuery(parameters: Parameter[], typed: Record<string, unknown>) {
  const pairs: string[] = []
  for (const parameter of parameters.filter((p) => p.in === 'query')) {
    const value = typed[parameter.name] ?? prefilled(parameter)
    if (value === GENERATED) throw new Error(`${parameter.name} would be filled with a made-up sample of its schema`)
    if (value === undefined) continue
    if (parameter.style === 'deepObject' && value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) pairs.push(`${encodeURIComponent(`${parameter.name}[${key}]`)}=${encodeURIComponent(String(inner))}`)
    } else {
      pairs.push(`${encodeURIComponent(parameter.name)}=${encodeURIComponent(String(value))}`)
    }
  }
  return pairs.join('&')
}

describe('/docs "Try it out"', () => {
  let t: TestApp
  let acme: Tenant
  let document: any
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t)
    for (const first_name of ['Bea', 'Zoe', 'Ana']) {
      expect((await t.http().post('/contacts').set(acme.key).send({ first_name })).status).toBe(201)
    }
    document = (await t.http().get('/openapi.json')).body
  })
  afterAll(async () => {
    await t.close()
  })

  it('when GET /contacts is tried with a sort, then the request Swagger UI builds returns the contacts sorted', async () => {
    const operation = document.paths['/contacts'].get
    const sort = operation.parameters.find((p: Parameter) => p.name === '$sort')
    expect(sort).toMatchObject({ in: 'query', style: 'deepObject', explode: true })
    for (const [direction, expected] of [[-1, ['Zoe', 'Bea', 'Ana']], [1, ['Ana', 'Bea', 'Zoe']]] as const) {
      const query = swaggerQuery(operation.parameters, { $sort: { first_name: direction } })
      expect(query).toContain('%24sort%5Bfirst_name%5D=' + direction)
      const res = await t.http().get(`/contacts?${query}`).set(acme.key)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data.map((c: any) => c.first_name)).toEqual(expected)
    }
  })

  it('when every list operation is tried with its defaults and documented example sort, then 200', async () => {
    // A list with credentials of its own (a required header: the web-chat visitor token) is tried by its own tests.
    const ownCredentials = (item: any) => item.get.parameters.some((p: any) => p.in === 'header' && p.required)
    const lists = Object.entries(document.paths).filter(([path, item]: [string, any]) =>
      item.get?.parameters?.some((p: Parameter) => p.name === '$limit') && !path.includes('{') && !ownCredentials(item))
    expect(lists.length).toBeGreaterThan(10)
    for (const [path, item] of lists as [string, any][]) {
      const parameters: Parameter[] = item.get.parameters
      expect(parameters.find((p) => p.name === '$limit')!.schema).toMatchObject({ type: 'integer', default: expect.any(Number) })
      const skip = parameters.find((p) => p.name === '$skip')
      if (skip) expect(skip.schema).toMatchObject({ type: 'integer', default: 0 })
      const sort = parameters.find((p) => p.name === '$sort') as any
      const query = swaggerQuery(parameters, sort ? { $sort: sort.example } : {})
      // A resource for people only (API keys refused) is tried with the owner's JWT, naming the organization.
      const peopleOnly = (feathersCore.getServiceOptions(t.app.service(path.slice(1) as any)) as any)?.refusesApiKeys === true
      const res = peopleOnly
        ? await t.http().get(`${path}?${query}&organization_id=${acme.organization.id}`).set(acme.bearer)
        : await t.http().get(`${path}?${query}`).set(acme.key)
      expect(res.status, `${path}?${query}: ${JSON.stringify(res.body)}`).toBe(200)
    }
  })

  it('when each sync-enabled list is tried with nothing typed in, then the form fills in no made-up value and the request answers 200', async () => {
    const lists = ['/companies', '/contacts', '/deals', '/deal-products', '/activities', '/products']
    for (const path of lists) {
      const parameters: Parameter[] = document.paths[path].get.parameters
      // The keyset cursor is two plain fields, empty until typed in; $or is described, not a parameter.
      expect(parameters.filter((p) => p.name.startsWith('$after')).map((p) => [p.name, prefilled(p)]), path)
        .toEqual([['$after[updated_at]', undefined], ['$after[id]', undefined]])
      expect(parameters.map((p) => p.name), path).not.toContain('$or')
      expect(document.paths[path].get.description, path).toContain('$or[0][email]=')
      const query = swaggerQuery(parameters, {})
      const res = await t.http().get(`${path}?${query}`).set(acme.key)
      expect(res.status, `${path}?${query}: ${JSON.stringify(res.body)}`).toBe(200)
    }
  })

  it('when the keyset cursor is typed into its two fields, then the request Swagger UI builds pages after it', async () => {
    const parameters: Parameter[] = document.paths['/contacts'].get.parameters
    const all = (await t.http().get('/contacts').set(acme.key).query({ $sort: { updated_at: 1, id: 1 } })).body.data
    const [first] = all
    const query = swaggerQuery(parameters.filter((p) => !['$skip', '$sort'].includes(p.name)), { '$after[updated_at]': first.updated_at, '$after[id]': first.id })
    expect(query).toContain(`${encodeURIComponent('$after[id]')}=${first.id}`)
    const res = await t.http().get(`/contacts?${query}`).set(acme.key)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.data.map((c: any) => c.id)).toEqual(all.slice(1).map((c: any) => c.id))
  })

  it('when the document is read, then POST /authentication is in it', () => {
    expect(document.paths['/authentication'].post).toMatchObject({ security: [], responses: { 201: expect.any(Object), 401: expect.any(Object) } })
  })
})
