import type { Application, HookContext, NextFunction } from '../declarations.js'
import { OutboxWorker } from './worker.js'

export { enqueueJob, enqueueJobs, OUTBOX_TABLE } from './jobs.js'
export type { OutboxJob, OutboxJobInput, OutboxJobStatus } from './jobs.js'
export { OutboxWorker } from './worker.js'
export type { DeliveryReport, JobHandler, JobOutcome } from './worker.js'

declare module '../declarations.js' {
  interface Configuration {
    outbox: OutboxWorker
  }
}

/**
 * The background worker of the application: features register a handler per topic on
 * app.get('outbox'); the worker starts with the application (app.setup, which listen() and the
 * tests call) and stops before the database pools close on app.teardown. Its claims, leases and
 * outcomes go through the background knex (src/db.ts).
 */
export const outbox = (app: Application) => {
  const worker = new OutboxWorker({
    db: app.get('backgroundKnex'),
    logger: app.get('logger'),
    leaseSeconds: app.get('outboxLeaseS'),
    concurrency: app.get('outboxConcurrency'),
    concurrencyPerOrganization: app.get('outboxConcurrencyPerOrganization'),
    pollIntervalMs: app.get('outboxPollIntervalMs')
  })
  app.set('outbox', worker)
  app.hooks({
    setup: [
      async (_context: HookContext, next: NextFunction) => {
        await next()
        worker.start()
      }
    ],
    // Registered before the platform's teardown hook, so this runs outside it: the worker has
    // stopped before the pool is destroyed.
    teardown: [
      async (_context: HookContext, next: NextFunction) => {
        await worker.stop()
        await next()
      }
    ]
  })
}
