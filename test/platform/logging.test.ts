import { Writable } from 'node:stream'
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createLogger, redactUrl, requestLog } from '../../src/logger.js'

/** Every line the app's logger writes, parsed. */
function capturedLogger() {
  const lines: Record<string, any>[] = []
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      callback()
    }
  })
  return { lines, logger: createLogger('info', 'json', destination) }
}

const GENERIC_500 = { name: 'GeneralError', message: 'Internal server error', code: 500, className: 'general-error' }

describe('logging', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let lines: Record<string, any>[]

  beforeAll(async () => {
    const captured = capturedLogger()
    lines = captured.lines
    t = await startApp({ logger: captured.logger })
    // A service with a bug, and one that calls it on behalf of its own caller.
    t.app.use('test-broken' as any, { async find() { throw new Error('kaboom: the real cause') } } as any)
    t.app.use('test-calls-broken' as any, { find: async () => (t.app as any).service('test-broken').find({}) } as any)
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    await t.close()
  })
  beforeEach(() => {
    lines.length = 0
  })

  // Error lines of the requests: the application's outbox worker shares the server test database
  // with other files, and may fail a job they left (a webhook to a receiver long gone) meanwhile.
  const errorLines = () => lines.filter((line) => line.level >= 50 && !String(line.msg).startsWith('outbox'))
  const requestLine = (reqId: string) => lines.find((line) => line.msg === 'request' && line.req_id === reqId)

  describe('secrets in the request log', () => {
    it('when an invitation is looked up with ?token=, then the request line shows the path but not the token', async () => {
      const token = 'invite-token-0123456789abcdef'
      const res = await t.http().get('/organizations-users-invites').query({ token }).set('X-Request-Id', 'log-invite')
      expect(res.status).toBeLessThan(500)
      const line = requestLine('log-invite')
      expect(line).toMatchObject({ method: 'GET', url: '/organizations-users-invites?token=[REDACTED]', status: res.status })
      expect(JSON.stringify(lines)).not.toContain(token)
    })

    it('when a reservation is cancelled through its public link, then the manage token in the path is not logged', async () => {
      const token = 'manage-token-abcdefghijklmnop'
      const res = await t.http().post(`/public/reservations/${token}/cancel`).set('X-Request-Id', 'log-cancel').send({})
      expect(res.status).toBe(404)
      expect(requestLine('log-cancel')).toMatchObject({ url: '/public/reservations/[REDACTED]/cancel', status: 404 })
      expect(JSON.stringify(lines)).not.toContain(token)
    })

    it('when any known secret parameter is sent, in any case or qs form, then only its value is redacted', () => {
      expect(redactUrl('/x?name=ada&TOKEN=t1&api_key=k1&access_token=a1&password=p1&secret=s1&signature=g1&key=k2&keep=1'))
        .toBe('/x?name=ada&TOKEN=[REDACTED]&api_key=[REDACTED]&access_token=[REDACTED]&password=[REDACTED]&secret=[REDACTED]&signature=[REDACTED]&key=[REDACTED]&keep=1')
      expect(redactUrl('/x?token[0]=t1&%74oken=t2')).toBe('/x?token[0]=[REDACTED]&%74oken=[REDACTED]')
      expect(redactUrl('/public/reservations/abc/cancel?reason=x')).toBe('/public/reservations/[REDACTED]/cancel?reason=x')
      expect(redactUrl('/companies/12?name=token')).toBe('/companies/12?name=token')
    })

    it("when a list is filtered by a person's name, e-mail or phone in the query string, then the request line keeps the filter's name but not its value", async () => {
      lines.length = 0
      const res = await t.http().get('/contacts?email=ada.private@example.test&first_name[$ilike]=Ada%25&$limit=5').set(acme.key).set('X-Request-Id', 'log-personal')
      expect(res.status).toBe(200)
      expect(requestLine('log-personal')?.url).toBe('/contacts?email=[REDACTED]&first_name[$ilike]=[REDACTED]&$limit=5')
      expect(redactUrl('/contacts?phone=%2B44%2020&searchTerm=Lovelace&company_id=3')).toBe('/contacts?phone=[REDACTED]&searchTerm=[REDACTED]&company_id=3')
    })

    it("when a caller asks for another organization's record, then the request line has no credential and no error line is written", async () => {
      const theirs = await t.http().post('/companies').set(globex.key).send({ name: 'Globex Corp' })
      lines.length = 0
      const res = await t.http().get(`/companies/${theirs.body.id}`).set(acme.key).set('X-Request-Id', 'log-cross')
      expect(res.status).toBe(404)
      expect(requestLine('log-cross')).toMatchObject({ url: `/companies/${theirs.body.id}`, status: 404 })
      expect(JSON.stringify(lines)).not.toContain(acme.apiKey)
      expect(errorLines(), JSON.stringify(errorLines())).toHaveLength(0)
    })
  })

  describe('server errors', () => {
    it('when a service throws a plain Error, then the client gets the generic 500 and exactly one error line carries the real error and req_id', async () => {
      const res = await t.http().get('/test-broken').set('X-Request-Id', 'log-500')
      expect(res.status).toBe(500)
      expect(res.body).toEqual(GENERIC_500)
      const errors = errorLines()
      expect(errors, JSON.stringify(errors)).toHaveLength(1)
      expect(errors[0]).toMatchObject({ req_id: 'log-500', err: { type: 'Error', message: 'kaboom: the real cause' } })
      expect(errors[0].err.stack).toContain('kaboom: the real cause')
      expect(errors[0].err.stack).toContain('logging.test.ts')
    })

    it('when the failing service is called by another service of the same request, then still one error line with the real error', async () => {
      const res = await t.http().get('/test-calls-broken').set('X-Request-Id', 'log-nested')
      expect(res.status).toBe(500)
      expect(res.body).toEqual(GENERIC_500)
      const errors = errorLines()
      expect(errors, JSON.stringify(errors)).toHaveLength(1)
      expect(errors[0]).toMatchObject({ req_id: 'log-nested', err: { type: 'Error', message: 'kaboom: the real cause' } })
    })

    it('when a request fails with a client error, then no error line is written', async () => {
      const res = await t.http().post('/companies').set(acme.key).send({})
      expect(res.status).toBe(400)
      expect(errorLines(), JSON.stringify(errorLines())).toHaveLength(0)
    })
  })
})

describe('request logging', () => {
  const { lines, logger } = capturedLogger()
  let t: TestApp
  let acme: Tenant
  beforeAll(async () => {
    t = await startApp({ logger })
    acme = await createTenant(t)
    // Something that logs while serving a request, as a service hook does: through requestLog
    // with the call's params.requestId, also in a service the request's service calls with its params.
    t.app.service('companies').hooks({ before: { find: [async (context: any) => requestLog(context.app.get('logger'), context.params.requestId).warn({ path: context.path }, 'inside a hook')] } })
    t.app.use('test-calls-companies' as any, { find: async (params: any) => (t.app as any).service('companies').find({ ...params, provider: undefined, query: {} }) } as any)
  })
  afterAll(async () => {
    await t.close()
  })

  it('when a request is served, then the lines logged for it, inside hooks too, carry its req_id; lines outside requests carry none', async () => {
    const res = await t.http().get('/companies').set(acme.key).set('X-Request-Id', 'trace-me-1')
    expect(res.status).toBe(200)
    await new Promise((resolve) => setImmediate(resolve))
    const inside = lines.find((line) => line.msg === 'inside a hook')
    expect(inside).toMatchObject({ req_id: 'trace-me-1', path: 'companies', level: 40 })
    const request = lines.filter((line) => line.msg === 'request' && line.req_id === 'trace-me-1')
    expect(request).toHaveLength(1)
    expect(request[0]).toMatchObject({ method: 'GET', status: 200 })

    lines.length = 0
    const nested = await t.http().get('/test-calls-companies').set(acme.key).set('X-Request-Id', 'trace-me-2')
    expect(nested.status).toBe(200)
    expect(lines.find((line) => line.msg === 'inside a hook')).toMatchObject({ req_id: 'trace-me-2', path: 'companies' })

    t.app.get('logger').info('outside any request')
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.find((line) => line.msg === 'outside any request')).not.toHaveProperty('req_id')
  })
})
