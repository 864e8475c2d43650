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
  schema: { type?: string; default?: unknown }
}

/**
 * The query string Swagger UI's "Try it out" builds from the document: the values typed in, else
 * each parameter's default; deepObject parameters as name[key]=value, the rest as name=value.
 */
function swaggerQuery(parameters: Parameter[], typed: Record<string, unknown>) {
  const pairs: string[] = []
  for (const parameter of parameters.filter((p) => p.in === 'query')) {
    const value = typed[parameter.name] ?? parameter.schema.default
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

  it('when the document is read, then POST /authentication is in it', () => {
    expect(document.paths['/authentication'].post).toMatchObject({ security: [], responses: { 201: expect.any(Object), 401: expect.any(Object) } })
  })
})
