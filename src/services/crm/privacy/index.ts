import type { Application } from '../../../declarations.js'
import { runInBackground } from '../../../background.js'
import { PURGE_TOPIC, runFollowUp } from './follow-up.js'
import { PURGE_KIND, enqueueDuePurges, runRetentionPass } from './retention.js'

/** An erasure's follow-up or a retention pass that failed (storage unreachable) is tried again this often, at most. */
const MAX_ATTEMPTS = 10
const RETRY_BASE_MS = 60_000

/**
 * Personal data on request (docs/privacy.md): the outbox runs the 'purge' topic (retention passes
 * per organization, an erasure's follow-up, the stored files of purged rows); every
 * PURGE_INTERVAL_S each instance writes a retention job for each organization that has records
 * past its retention and none waiting.
 */
export const personalData = (app: Application) => {
  const worker = app.get('outbox')
  const intervalMs = app.get('purgeIntervalS') * 1000
  worker.register({
    topic: PURGE_TOPIC,
    maxAttempts: MAX_ATTEMPTS,
    retryBaseMs: RETRY_BASE_MS,
    labels: ['purged'],
    run: (job) => (job.kind === PURGE_KIND ? runRetentionPass(app, job) : runFollowUp(app, job))
  })
  if (intervalMs === 0) return
  runInBackground(app, {
    name: 'scheduling retention purges',
    intervalMs,
    pass: async () => {
      if (await enqueueDuePurges(app.get('backgroundKnex'))) worker.kick()
    }
  })
}
