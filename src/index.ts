import { createApp } from './app.js'
import { describeDatabase, migrate } from './db.js'
import { exitOnStartupError } from './startup.js'

const SHUTDOWN_GRACE_MS = 10_000

async function main() {
  const app = await createApp()
  const logger = app.get('logger')
  await migrate(app.get('knex'))
  const port = app.get('port')
  const host = app.get('host')
  const server = await app.listen(port, host)

  logger.info(
    { url: `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`, database: describeDatabase(app.get('databaseUrl'), app.get('dataDir')) },
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

main().catch((error) => exitOnStartupError(error, process.env.DATABASE_URL))
