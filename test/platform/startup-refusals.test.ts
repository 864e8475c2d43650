import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, leftovers, run } from '../helpers/process.js'

// `npm start` refusing what a person can fix: one line, exit 1, within 2 s, before the build and
// the migrations (the data directory's database is never created).
const left = leftovers('crm-refusal-')
afterAll(() => left.clear())

const REFUSAL_MS = 2_000

/** What npm itself prints around a script (its banner, its own error lines). */
const lines = (text: string) => text.split('\n').filter((line) => line.trim() && !/^npm (warn|error)|^>/.test(line.trim()))

async function refusedStart(env: Record<string, string>) {
  const dataDir = left.tempDir()
  const startedAt = Date.now()
  const spawned = left.started(
    run('npm', ['start'], { npm_config_update_notifier: 'false', LOG_LEVEL: 'info', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', ...env })
  )
  const code = await spawned.exited
  const elapsed = Date.now() - startedAt
  const { stdout, stderr } = spawned.output()
  return { code, elapsed, stdout: lines(stdout), stderr: lines(stderr), dataDir }
}

/** A loopback listener of this test process on a free port, closed after the test file. */
async function occupiedPort(host = '127.0.0.1') {
  const port = await freePort()
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return port
}

describe('start-up refusals', () => {
  it('when the port is in use, then `npm start` prints one line naming the port and exits 1 within 2 s, without a "listening" line', async () => {
    const port = await occupiedPort()
    const refused = await refusedStart({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: 'memory://' })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toEqual([`Error: Port ${port} is already in use on 127.0.0.1: stop the process listening there, or set PORT to another port`])
    expect(refused.stdout.join('\n')).not.toMatch(/listening/i)
    expect(refused.elapsed).toBeLessThan(REFUSAL_MS)
  }, 30_000)

  it.each([
    ['not a URL', { DATABASE_URL: 'localhost:5432/crm' }, /^Error: DATABASE_URL is not a URL/],
    ['a mysql:// URL', { DATABASE_URL: 'mysql://root@127.0.0.1:3306/crm' }, /^Error: DATABASE_URL must be a postgres:\/\/ URL, not mysql:/],
    ['a server that refuses connections', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/crm' }, /^Error: Cannot connect to the database at 127\.0\.0\.1:1\/crm: connection refused/],
    ['missing in production (AUTH_SECRET)', { NODE_ENV: 'production', AUTH_SECRET: '', DATABASE_URL: 'memory://' }, /^Error: AUTH_SECRET must be set in production/]
  ])('when DATABASE_URL or AUTH_SECRET is %s, then `npm start` prints that in one line and exits 1 within 2 s', async (_label, env, message) => {
    const refused = await refusedStart({ PORT: String(await freePort()), ...env })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toHaveLength(1)
    expect(refused.stderr[0]).toMatch(message)
    expect(refused.stdout).toEqual([])
    expect(refused.elapsed).toBeLessThan(REFUSAL_MS)
  }, 30_000)

  it.each([
    ['PORT is not a number', { PORT: 'abc' }, "Error: PORT must be a whole number, got 'abc'"],
    ['PORT is out of range', { PORT: '70000' }, "Error: PORT must be at most 65535, got '70000'"],
    ['LOG_LEVEL is not a level', { LOG_LEVEL: 'loud' }, "Error: LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent, got 'loud'"],
    ['LOG_FORMAT is not a format', { LOG_FORMAT: 'fancy' }, "Error: LOG_FORMAT must be one of: auto, json, pretty, got 'fancy'"]
  ])('when %s, then `npm start` names the setting, what it takes and what it got in one line and exits 1 within 2 s', async (_label, env, message) => {
    const refused = await refusedStart({ PORT: String(await freePort()), ...env })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toEqual([message])
    expect(refused.stdout).toEqual([])
    expect(refused.elapsed).toBeLessThan(REFUSAL_MS)
    expect(fs.existsSync(path.join(refused.dataDir, 'pgdata'))).toBe(false)
  }, 30_000)

  it.skipIf(!process.env.DATABASE_URL)('when DATABASE_URL names a database the server does not have, then `npm start` says so in one line and exits 1 within 2 s', async () => {
    const url = new URL(process.env.DATABASE_URL!)
    url.pathname = '/crm_no_such_database'
    const refused = await refusedStart({ PORT: String(await freePort()), DATABASE_URL: url.href })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toEqual([`Error: Cannot connect to the database at ${url.hostname}:${url.port || 5432}/crm_no_such_database: database does not exist (check DATABASE_URL)`])
    expect(refused.elapsed).toBeLessThan(REFUSAL_MS)
  }, 30_000)

  it('when another live process holds the data directory, then `npm start` names it in one line and exits 1 within 2 s, before the embedded database is created', async () => {
    const dataDir = left.tempDir()
    // This test's own process is alive: its pid in the lock stands for a running server.
    fs.writeFileSync(path.join(dataDir, 'crm.lock'), `${process.pid}\n`)
    const refused = await refusedStart({ PORT: String(await freePort()), DATA_DIR: dataDir })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toHaveLength(1)
    expect(refused.stderr[0]).toContain(`in use by process ${process.pid}`)
    expect(refused.elapsed).toBeLessThan(REFUSAL_MS)
    expect(fs.existsSync(path.join(dataDir, 'pgdata'))).toBe(false)
    expect(fs.readFileSync(path.join(dataDir, 'crm.lock'), 'utf8').trim()).toBe(String(process.pid))
  }, 30_000)
})
