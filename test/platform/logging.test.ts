import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createLogger } from '../../src/logger.js'

describe('request logging', () => {
  const lines: any[] = []
  const capture = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      callback()
    }
  })
  let t: TestApp
  let acme: Tenant
  beforeAll(async () => {
    t = await startApp({ logger: createLogger('info', 'json', capture) })
    acme = await createTenant(t)
    // Something that logs while serving a request, as a service hook or the error hook does.
    t.app.service('companies').hooks({ before: { find: [async (context: any) => context.app.get('logger').warn({ path: context.path }, 'inside a hook')] } })
  })
  afterAll(async () => {
    await t.close()
  })

  it('when a request is served, then every line it logs, inside hooks too, carries its req_id; lines outside requests carry none', async () => {
    const res = await t.http().get('/companies').set(acme.key).set('X-Request-Id', 'trace-me-1')
    expect(res.status).toBe(200)
    await new Promise((resolve) => setImmediate(resolve))
    const inside = lines.find((line) => line.msg === 'inside a hook')
    expect(inside).toMatchObject({ req_id: 'trace-me-1', path: 'companies', level: 40 })
    const request = lines.filter((line) => line.msg === 'request' && line.req_id === 'trace-me-1')
    expect(request).toHaveLength(1)
    expect(request[0]).toMatchObject({ method: 'GET', status: 200 })

    t.app.get('logger').info('outside any request')
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.find((line) => line.msg === 'outside any request')).not.toHaveProperty('req_id')
  })
})
