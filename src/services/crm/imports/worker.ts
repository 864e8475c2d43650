import type { Application } from '../../../declarations.js'
import { IMPORT_TOPIC, changeImport, runImport } from './run.js'

/** A run that stops on a transient error (the database away, the batch budget spent) is tried again this often, at most. */
const MAX_ATTEMPTS = 50
const RETRY_BASE_MS = 10_000
/** Imports queued while no worker ran (a restart) are found by this poll, and at start-up. */

/**
 * CSV imports run as jobs of the outbox (topic 'imports', src/services/crm/imports/run.ts): one job per
 * import, which goes on after its last committed chunk whenever it runs again. An import whose
 * job is given up is marked failed with the error.
 */
export const imports = (app: Application) => {
  const worker = app.get('outbox')
  if (worker.handler(IMPORT_TOPIC)) return
  worker.register({
    topic: IMPORT_TOPIC,
    maxAttempts: MAX_ATTEMPTS,
    retryBaseMs: RETRY_BASE_MS,
    labels: ['imported'],
    run: (job) => runImport(app, job as any),
    onFailed: async (job, error) => {
      await changeImport(app, { organization_id: job.organization_id!, id: job.payload.import_id }, { status: 'failed', error, finished_at: app.get('knex').fn.now() },
        (query) => query.whereIn('status', ['queued', 'running']))
    }
  })
}
