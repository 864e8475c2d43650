import cluster from 'node:cluster'
import { createLogger } from './logger.js'
import { exitOnStartupError, webConcurrency } from './startup.js'

const SHUTDOWN_GRACE_MS = 10_000

/** One process serving the API: migrations (several processes wait for each other), then listen. */
async function serve() {
  const [{ createApp }, { describeDatabase, migrate }] = await Promise.all([import('./app.js'), import('./db.js')])
  const app = await createApp()
  const logger = app.get('logger')
  await migrate(app.get('knex'))
  const port = app.get('port')
  const host = app.get('host')
  const server = await app.listen(port, host)

  logger.info(
    {
      url: `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`,
      database: describeDatabase(app.get('databaseUrl'), app.get('dataDir')),
      ...(cluster.isWorker ? { worker: cluster.worker?.id } : {})
    },
    'CRM API listening'
  )

  // SIGTERM: stop accepting connections, let in-flight requests finish, then close the pool.
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down')
    const forced = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS)
    forced.unref()
    server.closeIdleConnections?.()
    await app.teardown()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

/**
 * The cluster's primary: forks the workers and passes SIGTERM/SIGINT on to them. A worker that
 * dies after it was serving is replaced; one that exits before it ever listened (a start-up
 * error: a bad DATABASE_URL, say) stops the whole service with its exit code, as a single
 * process would have.
 */
function supervise(workers: number) {
  const logger = createLogger(process.env.LOG_LEVEL || 'info', process.env.LOG_FORMAT || 'json')
  let stopping = false
  const fork = () => {
    const worker = cluster.fork()
    let listening = false
    worker.once('listening', () => (listening = true))
    worker.once('exit', (code, signal) => {
      if (stopping) {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
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
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 1_000).unref()
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

async function main() {
  const workers = cluster.isPrimary ? webConcurrency() : 1
  if (workers > 1) supervise(workers)
  else await serve()
}

main().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
