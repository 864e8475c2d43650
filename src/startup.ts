import fs from 'node:fs'
import path from 'node:path'

/**
 * A problem the person starting the service can fix (a bad DATABASE_URL, a data directory in
 * use): printed as its one-line message, without a stack trace, and the process exits 1.
 */
export class StartupError extends Error {
  name = 'StartupError'
}

/**
 * DATABASE_URL's value for an embedded database in memory (the tests'): 'memory://' starts empty,
 * 'memory:///path/to/dump.tar' starts as a copy of the data directory dumped there (PGlite's dumpDataDir).
 */
export const MEMORY_DATABASE = 'memory://'
export const isMemoryDatabase = (databaseUrl: string) => databaseUrl.startsWith(MEMORY_DATABASE)

/**
 * WEB_CONCURRENCY: how many processes serve the port (default 1; its range is the settings
 * schema's). Above 1, this process is the primary of node's cluster module: it forks that many
 * workers, each a whole service with its own database pool, and the port is shared between them.
 */
export function webConcurrency(settings: { webConcurrency: number; databaseUrl: string }): number {
  const workers = settings.webConcurrency
  if (workers > 1 && !settings.databaseUrl) {
    throw new StartupError('WEB_CONCURRENCY above 1 needs DATABASE_URL: the embedded database belongs to one process')
  }
  return workers
}

/** Throws a StartupError when NODE_ENV is production and no AUTH_SECRET signs the tokens. */
export function checkAuthSecret(secret: string | undefined, env: NodeJS.ProcessEnv = process.env) {
  if (env.NODE_ENV === 'production' && !secret) {
    throw new StartupError('AUTH_SECRET must be set in production: a long random string (tokens signed with it stay valid across restarts)')
  }
}

const POSTGRES_PROTOCOLS = ['postgres:', 'postgresql:']

/** Throws a StartupError unless databaseUrl is a postgres:// URL. */
export function checkDatabaseUrl(databaseUrl: string) {
  let url: URL | undefined
  try {
    // 'localhost:5432/crm' parses as the scheme 'localhost:': a URL here has '//' after its scheme.
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(databaseUrl)) url = new URL(databaseUrl)
  } catch {
    // reported below
  }
  if (!url) {
    throw new StartupError(
      'DATABASE_URL is not a URL: expected postgres://user:password@host:5432/database (or unset it for the embedded database)'
    )
  }
  if (!POSTGRES_PROTOCOLS.includes(url.protocol)) {
    throw new StartupError(
      `DATABASE_URL must be a postgres:// URL, not ${url.protocol}// (only PostgreSQL is supported; unset it for the embedded database)`
    )
  }
}

// Connection failures a person can act on, by the code pg or the network layer gives them.
const CONNECTION_PROBLEMS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  '28P01': 'password authentication failed',
  '28000': 'access denied',
  '3D000': 'database does not exist'
}

/** The database server's address without credentials, for messages. */
const serverOf = (databaseUrl: string) => {
  try {
    const url = new URL(databaseUrl)
    return `${url.hostname}:${url.port || 5432}${url.pathname}`
  } catch {
    return 'the database server'
  }
}

/** A StartupError for a failure to reach the database server, or undefined for any other error. */
export function connectionProblem(error: any, databaseUrl: string): StartupError | undefined {
  const code = error?.code ?? error?.errors?.[0]?.code
  const problem = CONNECTION_PROBLEMS[code] ?? (error?.name === 'KnexTimeoutError' ? 'no connection within the timeout' : undefined)
  if (!problem) return undefined
  return new StartupError(`Cannot connect to the database at ${serverOf(databaseUrl)}: ${problem} (check DATABASE_URL)`)
}

/** Prints a StartupError as one line (anything else with its stack) and exits 1. */
export function exitOnStartupError(error: unknown, databaseUrl = ''): never {
  const known = error instanceof StartupError ? error : connectionProblem(error, databaseUrl)
  console.error(known ? `Error: ${known.message}` : error)
  process.exit(1)
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch (error: any) {
    return error?.code === 'EPERM'
  }
  return !isZombie(pid)
}

/**
 * A killed process that nobody has reaped yet still answers kill(pid, 0): where an init process
 * does not reap orphans (some containers and VMs), it stays so. Such a process holds nothing.
 */
function isZombie(pid: number) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))
  } catch {
    return false
  }
}

/**
 * Throws a StartupError naming the live process (another than this one) that holds DATA_DIR's
 * lock; a missing lock, or one whose process is gone, passes.
 */
export function checkDataDirFree(dataDir: string) {
  const dir = path.resolve(dataDir)
  let owner: number
  try {
    owner = Number.parseInt(fs.readFileSync(path.join(dir, 'crm.lock'), 'utf8'), 10)
  } catch {
    return
  }
  if (owner > 0 && owner !== process.pid && isAlive(owner)) {
    throw new StartupError(
      `The embedded database in ${dir} is in use by process ${owner}: stop that process first, or set DATABASE_URL to a PostgreSQL server to run several processes`
    )
  }
}

/**
 * One writer per embedded database: takes DATA_DIR/crm.lock holding this process's pid, or
 * refuses with a StartupError naming the running process. A lock whose process is gone (a
 * crash, a container restart reusing our pid) is taken over. Returns the release function,
 * which also runs when the process exits.
 */
export function lockDataDir(dataDir: string): () => void {
  const dir = path.resolve(dataDir)
  const file = path.join(dir, 'crm.lock')
  fs.mkdirSync(dir, { recursive: true })
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' })
      break
    } catch (error: any) {
      if (error?.code !== 'EEXIST' || attempt > 2) throw error
      checkDataDirFree(dataDir)
      fs.rmSync(file, { force: true })
    }
  }
  const release = () => {
    process.removeListener('exit', release)
    try {
      if (Number.parseInt(fs.readFileSync(file, 'utf8'), 10) === process.pid) fs.rmSync(file, { force: true })
    } catch {
      // already gone
    }
  }
  process.on('exit', release)
  return release
}
