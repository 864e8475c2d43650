import cluster from 'node:cluster'
import http from 'node:http'
import type { Server } from 'node:http'
import type { Application, Configuration } from './declarations.js'
import { createLogger } from './logger.js'
import { listenProblem, runPreflight } from './preflight.js'
import { exitOnStartupError, webConcurrency } from './startup.js'

const IDLE_SWEEP_MS = 100

/** One process serving the API: migrations (several processes wait for each other), then listen. */
async function serve() {
  const [{ createApp }, { describeDatabase, migrate }] = await Promise.all([import('./app.js'), import('./db.js')])
  // A signal that comes while the service starts (migrations, set-up) is kept and honoured once it
  // serves: the process then drains and exits 0 like any stop, instead of dying half set up.
  let requested: string | undefined
  let onSignal: (signal: string) => void = (signal) => {
    requested ??= signal
  }
  process.on('SIGTERM', () => onSignal('SIGTERM'))
  process.on('SIGINT', () => onSignal('SIGINT'))
  const app = await createApp()
  const logger = app.get('logger')
  await migrate(app.get('knex'))
  const port = app.get('port')
  const host = app.get('host')
  const server = await listen(app, port, host)

  logger.info(
    {
      url: `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`,
      database: describeDatabase(app.get('databaseUrl'), app.get('dataDir')),
      ...(cluster.isWorker ? { worker: cluster.worker?.id } : {})
    },
    'CRM API listening'
  )

  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    void shutdown(app, server, signal).then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      }
    )
  }
  onSignal = stop
  if (requested) stop(requested)
}

/**
 * app.listen() as Feathers' Koa transport does it, except that a port it cannot bind (taken since
 * the pre-flight check) rejects as a StartupError before the application is set up. A single
 * process binds first and answers 503 on /health while it sets up; a worker of several binds once
 * set up, since the primary hands connections only to the workers that listen, and none should
 * reach a worker still starting while another one answers.
 */
async function listen(app: Application, port: number, host: string): Promise<Server> {
  const server = http.createServer(app.callback())
  const bind = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', (error) => reject(listenProblem(error, host, port) ?? error))
      server.listen(port, host, () => resolve())
    })
  if (!cluster.isWorker) await bind()
  app.server = server
  await app.setup(server)
  if (cluster.isWorker) await bind()
  return server
}

/**
 * Stops without dropping a request, within SHUTDOWN_TIMEOUT_S (then exits 1): the answers from
 * now on close their connections (the requests in flight are answered first), the listener and
 * the idle keep-alive connections close, Socket.io clients are disconnected, and the outbox
 * worker finishes the jobs it runs and claims no more; once every connection
 * has ended, the application tears down (the pools close).
 */
async function shutdown(app: Application, server: Server, signal: string) {
  const logger = app.get('logger')
  setTimeout(() => {
    logger.error({ signal }, 'shutdown timed out; exiting')
    process.exit(1)
  }, app.get('shutdownTimeoutS') * 1000)
  app.set('draining', true)
  // A request whose bytes had arrived with the signal is read first, so it is not taken for idle.
  await new Promise((resolve) => setImmediate(resolve))
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  logger.info({ signal }, 'shutting down')
  const socketsClosed = app.io?.close()
  const outboxStopped = app.get('outbox').stop()
  // An answer whose headers left before the drain began leaves its connection idle afterwards.
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
  await Promise.all([closed, socketsClosed, outboxStopped])
  clearInterval(sweep)
  // Closed already: Feathers' Koa teardown would close it again, and its error would cut short
  // every teardown hook, the embedded database's clean shutdown included.
  app.server = undefined as unknown as Server
  await app.teardown()
  logger.info('stopped')
}

/**
 * The cluster's primary: forks the workers and passes SIGTERM/SIGINT on to them, then exits once
 * every worker has stopped (1 if one failed to, or after SHUTDOWN_TIMEOUT_S and a second). A
 * worker that dies after it was serving is replaced; one that exits before it ever listened (a
 * start-up error: a bad DATABASE_URL, say) stops the whole service with its exit code, as a
 * single process would have.
 */
function supervise(settings: Configuration, workers: number) {
  // The primary builds no application: the settings are those preflight read (config/, environment).
  const logger = createLogger(settings.logLevel, settings.logFormat)
  let stopping = false
  let failedToStop = false
  const fork = () => {
    const worker = cluster.fork()
    let listening = false
    worker.once('listening', () => (listening = true))
    worker.once('exit', (code, signal) => {
      if (stopping) {
        failedToStop ||= code !== 0
        if (Object.keys(cluster.workers ?? {}).length === 0) {
          logger.info('stopped')
          process.exit(failedToStop ? 1 : 0)
        }
        return
      }
      if (!listening) {
        stopping = true
        for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM')
        process.exit(code || 1)
      }
      logger.error({ worker: worker.id, code, signal }, 'worker exited; starting another')
      fork()
    })
  }
  for (let i = 0; i < workers; i++) fork()
  logger.info({ workers }, 'CRM API primary: workers starting')
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down workers')
    const alive = Object.values(cluster.workers ?? {})
    if (alive.length === 0) process.exit(0)
    for (const worker of alive) worker?.process.kill(signal)
    setTimeout(() => {
      logger.error({ signal }, 'workers did not stop in time; exiting')
      process.exit(1)
    }, settings.shutdownTimeoutS * 1000 + 1_000)
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

async function main() {
  // Run directly (a container), the start checks here what `npm start` checked before its build.
  if (cluster.isPrimary) {
    const settings = await runPreflight()
    const workers = webConcurrency(settings)
    if (workers > 1) return supervise(settings, workers)
  }
  await serve()
}

main().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
