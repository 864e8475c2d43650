import fs from 'node:fs'
import path from 'node:path'
import type { Knex } from 'knex'
import { afterAll, describe, expect, it } from 'vitest'
import { createKnex, migrate } from '../../src/db.js'
import { eventually, freePort, leftovers, portOpen, run, waitForHealth } from '../helpers/process.js'

// The service as people run it: `npm start` and `npm run seed` as real processes on loopback.
const left = leftovers('crm-process-')
afterAll(() => left.clear())
const tempDataDir = () => left.tempDir()

const npm = (args: string[], env: Record<string, string>) => {
  const spawned = run('npm', args, { LOG_LEVEL: 'warn', npm_config_update_notifier: 'false', ...env })
  return left.started(spawned)
}

/** Every process below pid (children first, then theirs). */
const descendants = (pid: number): number[] => {
  let children: number[] = []
  try {
    children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    // gone
  }
  return children.flatMap((child) => [child, ...descendants(child)])
}
const commandOf = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
  } catch {
    return ''
  }
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() && !/^npm (warn|error)|^>|^$/.test(line.trim()))

/**
 * A database nothing has migrated yet: a new one on the PostgreSQL server of DATABASE_URL, else
 * an embedded one on disk. env points `npm start` at it; open() connects this test to it.
 */
async function freshDatabase(): Promise<{ env: Record<string, string>; open: () => Promise<Knex> }> {
  const dataDir = tempDataDir()
  if (!process.env.DATABASE_URL) return { env: { DATABASE_URL: '', DATA_DIR: dataDir }, open: () => createKnex('', dataDir) }
  const scratch = await left.scratchDatabase(process.env.DATABASE_URL, 'crm_process_test')
  return { env: { DATABASE_URL: scratch.url, DATA_DIR: dataDir }, open: () => createKnex(scratch.url, dataDir, 1) }
}

const MIGRATION_FILES = fs.readdirSync('migrations').filter((file) => /^\d+_.+\.ts$/.test(file)).sort()

const recordedMigrations = async (open: () => Promise<Knex>) => {
  const db = await open()
  try {
    return await db('knex_migrations').orderBy('id').select('id', 'name', 'batch', 'migration_time')
  } finally {
    await db.destroy()
  }
}

/** `npm start` until GET /health answers, then SIGTERM; what it said on stderr once it is gone. */
async function startAndStop(env: Record<string, string>) {
  const port = await freePort()
  const server = npm(['start'], { PORT: String(port), ...env })
  const ready = await Promise.race([waitForHealth(port).then(() => true), server.exited.then(() => false)])
  expect(ready, server.output().stderr).toBe(true)
  process.kill(server.child.pid!, 'SIGTERM')
  expect(await server.exited).toBe(0)
  return lines(server.output().stderr)
}

describe.concurrent('the service as a process', () => {
  it('when `npm start` gets SIGTERM, then the server shuts down within 10 s and leaves no process behind; while it runs, a second start and a seed on its data directory are refused', async () => {
    const dataDir = tempDataDir()
    const port = await freePort()
    const server = npm(['start'], { PORT: String(port), DATABASE_URL: '', DATA_DIR: dataDir })
    await waitForHealth(port)
    const lock = path.join(dataDir, 'crm.lock')
    const owner = fs.readFileSync(lock, 'utf8').trim()
    expect(Number(owner)).toBeGreaterThan(0)

    const second = npm(['start'], { PORT: String(await freePort()), DATABASE_URL: '', DATA_DIR: dataDir })
    const seed = npm(['run', 'seed'], { DATABASE_URL: '', DATA_DIR: dataDir })
    for (const refused of [second, seed]) {
      expect(await refused.exited).not.toBe(0)
      const said = lines(refused.output().stderr)
      expect(said).toHaveLength(1)
      expect(said[0]).toContain(`in use by process ${owner}`)
      expect(said[0]).toContain('DATABASE_URL')
    }
    expect(fs.readFileSync(lock, 'utf8').trim()).toBe(owner)
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)

    const signalled = Date.now()
    process.kill(server.child.pid!, 'SIGTERM')
    expect(await eventually(async () => !server.groupAlive() && !(await portOpen(port)), 10_000)).toBe(true)
    expect(Date.now() - signalled).toBeLessThan(10_000)
    expect(fs.existsSync(lock)).toBe(false)
  }, 90_000)

  it('when `npm start` gets SIGINT (Ctrl-C), then its child is the compiled server itself, which shuts down within 10 s and leaves no process behind', async () => {
    const port = await freePort()
    const server = npm(['start'], { PORT: String(port), DATABASE_URL: 'memory://' })
    await waitForHealth(port)
    expect(descendants(server.child.pid!).map(commandOf)).toEqual(['node --heap-growing-percent=100 dist/src/index.js '])
    process.kill(server.child.pid!, 'SIGINT')
    expect(await eventually(async () => !server.groupAlive() && !(await portOpen(port)), 10_000)).toBe(true)
  }, 90_000)

  it.skipIf(!process.env.DATABASE_URL)('when `npm start` runs with WEB_CONCURRENCY=2, then two worker processes serve the one port, and SIGTERM stops them all within 10 s', async () => {
    const port = await freePort()
    const server = npm(['start'], { PORT: String(port), WEB_CONCURRENCY: '2', DATA_DIR: tempDataDir() })
    await waitForHealth(port)
    // npm, then the primary node process (the compiled service), then its workers.
    const primary = descendants(server.child.pid!).find((pid) => commandOf(pid).includes('dist/src/index.js'))!
    const workers = descendants(primary).filter((pid) => commandOf(pid).includes('dist/src/index.js'))
    expect(workers).toHaveLength(2)
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status)))
    expect(answers.every((status) => status === 200)).toBe(true)

    process.kill(server.child.pid!, 'SIGTERM')
    expect(await eventually(async () => !server.groupAlive() && !(await portOpen(port)), 10_000)).toBe(true)
  }, 90_000)

  it.each([
    ['not a number', 'many', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/crm' }, /WEB_CONCURRENCY must be a whole number, got 'many'/],
    ['2 with the embedded database', '2', { DATABASE_URL: '' }, /WEB_CONCURRENCY above 1 needs DATABASE_URL/]
  ])('when WEB_CONCURRENCY is %s, then the start prints one line naming the problem and exits 1', async (_label, workers, env, message) => {
    const spawned = run(process.execPath, ['--import', 'tsx', 'src/index.ts'], { ...env, WEB_CONCURRENCY: workers, PORT: '0' })
    left.started(spawned)
    expect(await spawned.exited).toBe(1)
    const { stderr } = spawned.output()
    expect(lines(stderr)).toHaveLength(1)
    expect(stderr).toMatch(message)
  }, 60_000)

  it.each([
    ['not a URL', 'localhost:5432/crm', /DATABASE_URL is not a URL/],
    ['a mysql:// URL', 'mysql://root@127.0.0.1:3306/crm', /DATABASE_URL must be a postgres:\/\/ URL, not mysql:/],
    ['an unreachable server', 'postgres://postgres@127.0.0.1:1/crm', /Cannot connect to the database at 127\.0\.0\.1:1\/crm: connection refused/]
  ])('when DATABASE_URL is %s, then the start prints one line naming the problem and exits 1', async (_label, databaseUrl, message) => {
    const spawned = run(process.execPath, ['--import', 'tsx', 'src/index.ts'], { DATABASE_URL: databaseUrl, PORT: '0' })
    left.started(spawned)
    expect(await spawned.exited).toBe(1)
    const { stdout, stderr } = spawned.output()
    expect(lines(stderr)).toHaveLength(1)
    expect(stderr).toMatch(message)
    expect(stderr).not.toMatch(/\n\s+at /)
    expect(stdout).toBe('')
  }, 60_000)
})

// One after the other, after the rest: each migrates a fresh database, the heaviest start there is.
describe('the compiled start and the migrations from the sources', () => {
  it('when the migrations ran from the TypeScript sources, then the compiled `npm start` finds the schema current: it starts, runs none again and records nothing', async () => {
    const database = await freshDatabase()
    const db = await database.open()
    try {
      await migrate(db)
    } finally {
      await db.destroy()
    }
    const before = await recordedMigrations(database.open)
    expect(before.map((row) => row.name)).toEqual(MIGRATION_FILES)

    expect(await startAndStop(database.env)).toEqual([])
    expect(await recordedMigrations(database.open)).toEqual(before)
  }, 120_000)

  it('when the compiled `npm start` migrated a fresh database, then it recorded the source names (<name>.ts) and the migrations from the sources find nothing left to do', async () => {
    const database = await freshDatabase()
    expect(await startAndStop(database.env)).toEqual([])
    const recorded = await recordedMigrations(database.open)
    expect(recorded.map((row) => row.name)).toEqual(MIGRATION_FILES)

    const db = await database.open()
    try {
      expect((await migrate(db))[1]).toEqual([])
    } finally {
      await db.destroy()
    }
    expect(await recordedMigrations(database.open)).toEqual(recorded)
  }, 120_000)
})

describe('the embedded database across restarts', () => {
  it('when `npm start` is stopped with SIGTERM and started again on the same data directory, then the next id follows the last (the database shut down cleanly)', async () => {
    const env = { DATABASE_URL: '', DATA_DIR: tempDataDir() }
    const signUp = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/users`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: `restart-${Math.random().toString(36).slice(2, 10)}@example.test`, password: 'correct horse battery' })
      })
      expect(res.status).toBe(201)
      return ((await res.json()) as { id: number }).id
    }
    const ids: number[] = []
    for (let start = 0; start < 2; start++) {
      const port = await freePort()
      const server = npm(['start'], { PORT: String(port), ...env })
      await waitForHealth(port)
      ids.push(await signUp(port))
      process.kill(server.child.pid!, 'SIGTERM')
      expect(await server.exited, server.output().stderr).toBe(0)
    }
    expect(ids[1]).toBe(ids[0] + 1)
  }, 120_000)
})
