import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import configuration from '@feathersjs/configuration'
import pg from 'pg'
import type { Configuration } from './declarations.js'
import { configurationSchema, configurationValidator } from './configuration.js'
import { describeAjvError } from './hooks/validation-messages.js'
import type { AjvError } from './hooks/validation-messages.js'
import { StartupError, checkAuthSecret, checkDataDirFree, checkDatabaseUrl, connectionProblem, exitOnStartupError, isMemoryDatabase, webConcurrency } from './startup.js'

// How long the database server may take to answer a connection before the start goes on without
// an answer (the pool's own connection then reports what is wrong).
const PROBE_TIMEOUT_MS = 1_500

/**
 * Throws a StartupError when the database server of databaseUrl cannot be used as it is named: it
 * refuses connections, has no address, refuses the credentials or has no such database. One
 * connection is opened and closed at once; a server that does not answer in time is left to the pool.
 */
async function checkDatabaseReachable(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: PROBE_TIMEOUT_MS })
  // A connection the server ends later (it was only a probe) is not an error of the start.
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (error) {
    const problem = connectionProblem(error, databaseUrl)
    if (problem) throw problem
  } finally {
    await client.end().catch(() => {})
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

type Settings = Pick<Configuration, 'host' | 'port' | 'databaseUrl' | 'dataDir' | 'webConcurrency'> & { authentication?: { secret?: string } }

/** The environment variable of a setting (config/custom-environment-variables.json), by its path in the settings. */
function environmentVariableOf(settingPath: string[]): string | undefined {
  const directory = process.env.NODE_CONFIG_DIR ?? path.join(process.cwd(), 'config')
  let node: any = JSON.parse(fs.readFileSync(path.join(directory, 'custom-environment-variables.json'), 'utf8'))
  for (const key of settingPath) node = node?.[key]
  return typeof node === 'string' ? node : node?.__name
}

/** The JSON-Schema type of a top-level setting. */
const settingType = (name: string): string | undefined =>
  (configurationSchema as { properties?: Record<string, { type?: string }> }).properties?.[name]?.type

/**
 * Throws a StartupError naming the first setting the configuration's schema refuses, by the
 * environment variable that sets it, with what it takes and what it got (PORT=abc, LOG_LEVEL=loud).
 * The application checks the same schema once it is set up: here it costs milliseconds.
 */
export async function checkSettings(settings: unknown, env: NodeJS.ProcessEnv = process.env) {
  try {
    await configurationValidator(settings)
  } catch (error: any) {
    const refused: AjvError | undefined = error?.errors?.[0]
    if (!refused) throw error
    const [field] = describeAjvError(refused)
    const variable = environmentVariableOf(field.split('.'))
    const given = variable !== undefined ? env[variable] : undefined
    // A number setting given text is dropped by the configuration reader: it then reads as missing.
    const type = refused.keyword === 'required' && given !== undefined ? settingType(field) : undefined
    const [, rule] = describeAjvError(type ? { keyword: 'type', params: { type } } : refused)
    throw new StartupError(`${variable ?? field} ${rule}${given !== undefined ? `, got '${given}'` : ''}`)
  }
}

/**
 * The refusals a person can fix, checked in well under a second before anything slow (the build,
 * the migrations): every setting's form (the configuration's schema), WEB_CONCURRENCY, AUTH_SECRET
 * in production, DATABASE_URL's form and whether its server takes a connection to its database,
 * the embedded database's lock, and the port.
 */
export async function preflight(settings: Settings, env: NodeJS.ProcessEnv = process.env) {
  await checkSettings(settings, env)
  webConcurrency(settings)
  checkAuthSecret(settings.authentication?.secret, env)
  const { databaseUrl } = settings
  if (!databaseUrl) checkDataDirFree(settings.dataDir)
  else if (!isMemoryDatabase(databaseUrl)) {
    checkDatabaseUrl(databaseUrl)
    await checkDatabaseReachable(databaseUrl)
  }
  await checkPortFree(settings.host, Number(settings.port))
}

/**
 * preflight() on the settings of config/ and the environment, which it returns; a refusal is
 * printed as one line and exits 1.
 */
export async function runPreflight(): Promise<Configuration> {
  const settings = configuration()() as unknown as Configuration
  await preflight(settings).catch((error) => exitOnStartupError(error, settings.databaseUrl))
  return settings
}
