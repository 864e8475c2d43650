import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import restModule from '@feathersjs/rest-client'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import { createClient } from '../../src/client.js'

// The package is CommonJS with a default export; under NodeNext the callable sits on .default.
const rest: (base: string) => any = (restModule as any).default ?? restModule

describe('typed client', () => {
  let t: TestApp
  let server: http.Server
  let url: string
  beforeAll(async () => {
    t = await startApp()
    server = http.createServer(t.app.callback()).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    await t.close()
  })

  it('when the typed client is given an API key, then it creates, finds, searches and removes companies over HTTP', async () => {
    const tenant = await createTenant(t)
    const client = createClient(rest(url).fetch(fetch, { headers: { 'x-api-key': tenant.apiKey } }))
    const companies = client.service('companies')
    const created = await companies.create({ name: 'Client Co' } as any)
    expect(created).toMatchObject({ name: 'Client Co', organization_id: tenant.organization.id })
    const page = await companies.find({ query: { name: 'Client Co' } } as any)
    expect(page).toMatchObject({ total: 1 })
    const found = await (companies as any).search({ searchTerm: 'client' })
    expect(found.data.map((c: any) => c.id)).toEqual([created.id])
    const removed = await companies.remove(created.id)
    expect(removed.deleted_at).toEqual(expect.any(String))
    await expect(companies.get(created.id)).rejects.toMatchObject({ code: 404, name: 'NotFound' })
  })
})
