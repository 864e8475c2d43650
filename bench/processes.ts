import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

export interface Server {
  name: string
  url: string
  child: ChildProcess
  /** The peak resident memory (VmHWM) of the server's own node process so far, in MB. */
  peakRssMb: () => number | undefined
  /** CPU time (user + system) the server's node processes have used so far, in ms. */
  cpuMs: () => number
  stop: () => Promise<void>
}

/**
 * node's arguments that run the service of a checkout as its `npm start` does: built to dist/,
 * then plain node. A checkout from before that build step (no scripts/build.mjs) runs with tsx's
 * loader, as its `npm start` did. BENCH_NODE_OPTIONS adds node options, to compare them on the same code.
 */
export function serviceScript(serviceDir: string): string[] {
  const extra = process.env.BENCH_NODE_OPTIONS?.split(/\s+/).filter(Boolean) ?? []
  if (!fs.existsSync(path.join(serviceDir, 'scripts', 'build.mjs'))) return [...extra, '--import', 'tsx', 'src/index.ts']
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: serviceDir, stdio: 'inherit' })
  // node's options as the checkout's start script gives them (`... && exec node [options] dist/src/index.js`).
  const start: string = JSON.parse(fs.readFileSync(path.join(serviceDir, 'package.json'), 'utf8')).scripts.start
  const options = start.match(/exec node (.*)dist\/src\/index\.js/)?.[1].split(/\s+/).filter(Boolean) ?? []
  return [...options, ...extra, 'dist/src/index.js']
}

/**
 * Starts a node server in its own process group and waits until readyPath answers 200.
 * `npx tsx file` starts a chain of processes (npx, the tsx launcher, the program); the memory
 * figure is read from the last of them, the one that runs the program.
 */
export async function startServer(
  name: string, args: string[], port: number, env: NodeJS.ProcessEnv, readyPath: string, logFile: string, cwd = process.cwd()
): Promise<Server> {
  // The server's own output (warnings, errors of requests cut off at shutdown) goes to a file.
  const log = fs.openSync(logFile, 'w')
  const child = spawn('npx', args, {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', log, log],
    cwd,
    detached: true
  })
  fs.closeSync(log)
  const url = `http://127.0.0.1:${port}`
  let exited = false
  child.on('exit', () => { exited = true })
  const deadline = Date.now() + 120_000
  for (;;) {
    if (exited) throw new Error(`${name} exited during start-up, see ${logFile}`)
    if (Date.now() > deadline) throw new Error(`${name} did not answer ${readyPath} within 120 s`)
    const status = await fetch(url + readyPath).then((r) => r.status, () => 0)
    if (status === 200) break
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return {
    name,
    url,
    child,
    peakRssMb: () => {
      // With WEB_CONCURRENCY the workers' peaks are added up (each had its own at some instant).
      const kb = nodeProcesses(child.pid!).reduce((sum, pid) => sum + (readStatus(pid).VmHWM ?? 0), 0)
      return kb ? Math.round(kb / 1024) : undefined
    },
    cpuMs: () => nodeProcesses(child.pid!).reduce((sum, pid) => sum + cpuTimeMs(pid), 0),
    stop: async () => {
      if (exited) return
      const done = new Promise((resolve) => child.once('exit', resolve))
      process.kill(-child.pid!, 'SIGTERM')
      const timer = setTimeout(() => { if (!exited) process.kill(-child.pid!, 'SIGKILL') }, 15_000)
      await done
      clearTimeout(timer)
    }
  }
}

/** The benchmark's own database on the server of `adminUrl` (BENCH_DATABASE, default crm_bench), as a URL. */
export function benchDatabaseUrl(adminUrl: string): URL {
  const url = new URL(adminUrl)
  url.pathname = `/${benchDatabaseName()}`
  return url
}

/** The name of the benchmark's database: BENCH_DATABASE, default crm_bench. */
export const benchDatabaseName = () => process.env.BENCH_DATABASE || 'crm_bench'

const CLOCK_TICKS_PER_S = 100

/** utime + stime of a process from /proc/<pid>/stat, in ms. */
export function cpuTimeMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S
  } catch {
    return 0
  }
}

/** Whether a database server runs on this machine (its processes can be read in /proc). */
export const onThisMachine = (databaseUrl: string) => ['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(new URL(databaseUrl).hostname)

/**
 * The CPU time of every Postgres process on this machine (the postmaster, its backends and workers),
 * in ms by process id: read before and after a scenario (databaseCpuSpentMs), the database's own
 * CPU per request. Undefined when the database is on another host, whose processes this machine
 * cannot see.
 */
export function databaseCpuMs(databaseUrl: string): Map<number, number> | undefined {
  if (!onThisMachine(databaseUrl)) return undefined
  const times = new Map<number, number>()
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('postgres')) times.set(Number(entry), cpuTimeMs(Number(entry)))
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return times
}

/**
 * The CPU the Postgres processes spent between two readings: each process alive at the second
 * reading, less what it had at the first (a process started since counts whole). A process that
 * ended in between is left out, rather than subtracting its whole past from the sum (a
 * connection closed or an autovacuum worker done during a scenario made the old sum negative).
 */
export const databaseCpuSpentMs = (before: Map<number, number>, after: Map<number, number>) => {
  let spent = 0
  for (const [pid, ms] of after) spent += ms - (before.get(pid) ?? 0)
  return spent
}

/** The node processes of a server: the leaf of the npx chain and, with WEB_CONCURRENCY, its workers. */
export function nodeProcesses(pid: number): number[] {
  const leaf = leafDescendant(pid)
  if (leaf === undefined) return []
  const parent = parentOf(leaf)
  // Cluster workers are siblings under the primary: take the primary and all its children.
  const primary = parent !== undefined && childrenOf(parent).length > 1 && parent !== pid ? parent : undefined
  return primary ? [primary, ...childrenOf(primary)] : [leaf]
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}

function readStatus(pid: number): Record<string, number> {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
    const fields: Record<string, number> = {}
    for (const line of text.split('\n')) {
      const match = /^(\w+):\s+(\d+)/.exec(line)
      if (match) fields[match[1]] = Number(match[2])
    }
    return fields
  } catch {
    return {}
  }
}

/** The deepest process below pid (following the first child at each level). */
function leafDescendant(pid: number): number | undefined {
  let current = pid
  for (let depth = 0; depth < 10; depth++) {
    const children = childrenOf(current)
    if (children.length === 0) return current
    current = children[0]
  }
  return current
}

function childrenOf(pid: number): number[] {
  try {
    return fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
  } catch {
    return []
  }
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}
