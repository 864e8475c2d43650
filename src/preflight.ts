import net from 'node:net'
import configuration from '@feathersjs/configuration'
import type { Configuration } from './declarations.js'
import { StartupError, checkAuthSecret, checkDataDirFree, checkDatabaseUrl, connectionProblem, exitOnStartupError, isMemoryDatabase, webConcurrency } from './startup.js'

// How long the database server's port may take to accept a connection before the start goes on
// without an answer (the pool's own connection then reports what is wrong).
const PROBE_TIMEOUT_MS = 1_500

/** Resolves once something accepted a TCP connection on host:port; rejects with the network error. */
function probe(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port })
    const done = (error?: Error) => {
      socket.destroy()
      if (error) reject(error)
      else resolve()
    }
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done())
    socket.once('connect', () => done())
    socket.once('error', done)
  })
}

/** Throws a StartupError when the database server of databaseUrl refuses connections or has no address. */
async function checkDatabaseReachable(databaseUrl: string) {
  const url = new URL(databaseUrl)
  // A Unix socket (host in the query string, or no host) is left to the pool.
  if (!url.hostname || url.searchParams.has('host')) return
  try {
    await probe(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 5432))
  } catch (error) {
    throw connectionProblem(error, databaseUrl) ?? error
  }
}

/** The StartupError for a port the service cannot listen on, or undefined for another error. */
export function listenProblem(error: any, host: string, port: number): StartupError | undefined {
  if (error?.code === 'EADDRINUSE') {
    return new StartupError(`Port ${port} is already in use on ${host}: stop the process listening there, or set PORT to another port`)
  }
  if (error?.code === 'EACCES') return new StartupError(`Port ${port} on ${host} needs privileges this process lacks: set PORT to 1024 or above`)
  if (error?.code === 'EADDRNOTAVAIL' || error?.code === 'ENOTFOUND') {
    return new StartupError(`HOST ${host} is not an address of this machine: set HOST to one (0.0.0.0 for all)`)
  }
  return undefined
}

/** Throws a StartupError unless host:port can be listened on now (the port is released at once). */
async function checkPortFree(host: string, port: number) {
  if (!port) return
  const server = net.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(listenProblem(error, host, port) ?? error))
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve()))
  })
}

type Settings = Pick<Configuration, 'host' | 'port' | 'databaseUrl' | 'dataDir'> & { authentication?: { secret?: string } }

/**
 * The refusals a person can fix, checked in well under a second before anything slow (the build,
 * the migrations): WEB_CONCURRENCY, AUTH_SECRET in production, DATABASE_URL's form and whether its
 * server answers, the embedded database's lock, and the port.
 */
export async function preflight(settings: Settings, env: NodeJS.ProcessEnv = process.env) {
  webConcurrency(env)
  checkAuthSecret(settings.authentication?.secret, env)
  const { databaseUrl } = settings
  if (!databaseUrl) checkDataDirFree(settings.dataDir)
  else if (!isMemoryDatabase(databaseUrl)) {
    checkDatabaseUrl(databaseUrl)
    await checkDatabaseReachable(databaseUrl)
  }
  await checkPortFree(settings.host, Number(settings.port))
}

/** preflight() on the settings of config/ and the environment; a refusal is printed as one line and exits 1. */
export async function runPreflight() {
  const settings = configuration()() as unknown as Settings
  await preflight(settings).catch((error) => exitOnStartupError(error, settings.databaseUrl))
}
