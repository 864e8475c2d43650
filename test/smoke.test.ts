import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from './helpers/app.js'
import type { TestApp } from './helpers/app.js'
import { createTenant } from './helpers/fixtures.js'

describe('smoke', () => {
  let t: TestApp
  beforeAll(async () => { t = await startApp() })
  afterAll(async () => { await t.close() })

  it('when a new user follows the README bootstrap, then the key creates and lists companies', async () => {
    const tenant = await createTenant(t)
    const created = await t.http().post('/companies').set(tenant.key).send({ name: 'Initech', website: 'https://initech.example' })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const list = await t.http().get('/companies').set(tenant.key).send({ query: { $limit: 5 } })
    expect(list.status, JSON.stringify(list.body)).toBe(200)
    expect(list.body).toMatchObject({ total: 1, limit: 5, skip: 0 })
    console.log(JSON.stringify(created.body), JSON.stringify(list.body))
  })
})
