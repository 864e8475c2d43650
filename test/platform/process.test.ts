import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createKnex } from '../../src/db.js'
import { eventually, freePort, portOpen, run, waitForHealth } from '../helpers/process.js'
import type { Spawned } from '../helpers/process.js'

// The service as people run it: `npm start` and `npm run seed` as real processes on loopback.
const started: Spawned[] = []
const dirs: string[] = []
afterAll(() => {
  for (const spawned of started) spawned.kill()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const tempDataDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-process-'))
  dirs.push(dir)
  return dir
}

const npm = (args: string[], env: Record<string, string>) => {
  const spawned = run('npm', args, { LOG_LEVEL: 'warn', npm_config_update_notifier: 'false', ...env })
  started.push(spawned)
  return spawned
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

  it('when `npm start` gets SIGINT (Ctrl-C), then the server shuts down within 10 s and leaves no process behind', async () => {
    const port = await freePort()
    const server = npm(['start'], { PORT: String(port), DATABASE_URL: 'memory://' })
    await waitForHealth(port)
    process.kill(server.child.pid!, 'SIGINT')
    expect(await eventually(async () => !server.groupAlive() && !(await portOpen(port)), 10_000)).toBe(true)
  }, 90_000)

  it('when `npm run seed` runs twice, then the second keeps the demo password and says so; a stale lock is taken over', async () => {
    const dataDir = tempDataDir()
    const passwordHash = async () => {
      const db = await createKnex('', dataDir)
      try {
        return (await db('users').where({ email: 'demo@example.com' }).first('password')).password as string
      } finally {
        await db.destroy()
      }
    }
    const first = npm(['run', 'seed'], { DATABASE_URL: '', DATA_DIR: dataDir })
    expect(await first.exited).toBe(0)
    expect(first.output().stdout).toMatch(/password: \S{8,}/)
    const hash = await passwordHash()

    // A crashed owner leaves its lock behind: a pid that is not alive.
    fs.writeFileSync(path.join(dataDir, 'crm.lock'), '999999999\n')
    const second = npm(['run', 'seed'], { DATABASE_URL: '', DATA_DIR: dataDir })
    expect(await second.exited).toBe(0)
    expect(second.output().stdout).toContain('login:    demo@example.com')
    expect(second.output().stdout).toContain('password: unchanged')
    expect(second.output().stdout).toMatch(/API key: {2}crm_/)
    expect(await passwordHash()).toBe(hash)
  }, 90_000)

  it.skipIf(!process.env.DATABASE_URL)('when `npm start` runs with WEB_CONCURRENCY=2, then two worker processes serve the one port, and SIGTERM stops them all within 10 s', async () => {
    const port = await freePort()
    const server = npm(['start'], { PORT: String(port), WEB_CONCURRENCY: '2', DATA_DIR: tempDataDir() })
    await waitForHealth(port)
    // npm, then the primary node process, then its workers.
    const primary = descendants(server.child.pid!).find((pid) => commandOf(pid).includes('src/index.ts'))!
    const workers = descendants(primary).filter((pid) => commandOf(pid).includes('src/index.ts'))
    expect(workers).toHaveLength(2)
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status)))
    expect(answers.every((status) => status === 200)).toBe(true)

    process.kill(server.child.pid!, 'SIGTERM')
    expect(await eventually(async () => !server.groupAlive() && !(await portOpen(port)), 10_000)).toBe(true)
  }, 90_000)

  it.each([
    ['not a number', 'many', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/crm' }, /WEB_CONCURRENCY must be a whole number of worker processes from 1 to 64, got 'many'/],
    ['2 with the embedded database', '2', { DATABASE_URL: '' }, /WEB_CONCURRENCY above 1 needs DATABASE_URL/]
  ])('when WEB_CONCURRENCY is %s, then the start prints one line naming the problem and exits 1', async (_label, workers, env, message) => {
    const spawned = run(process.execPath, ['--import', 'tsx', 'src/index.ts'], { ...env, WEB_CONCURRENCY: workers, PORT: '0' })
    started.push(spawned)
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
    started.push(spawned)
    expect(await spawned.exited).toBe(1)
    const { stdout, stderr } = spawned.output()
    expect(lines(stderr)).toHaveLength(1)
    expect(stderr).toMatch(message)
    expect(stderr).not.toMatch(/\n\s+at /)
    expect(stdout).toBe('')
  }, 60_000)
})
