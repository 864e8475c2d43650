import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { enqueueMail, mail } from '../../../mail/index.js'
import type { JobHandler, JobOutcome, OutboxJob } from '../../../outbox/index.js'
import { WEBHOOK_TOPIC } from '../../../webhook-events.js'
import { postWebhook, signature } from './sender.js'

/** An event is retried for at most this long after it happened, then marked failed. */
const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000
/** A subscription whose every delivery has failed for this long is deactivated. */
const DEACTIVATE_AFTER_S = 3 * 24 * 60 * 60
/** The outbox's longest wait between attempts (its default). */
const MAX_DELAY_MS = 60 * 60 * 1000

interface DeliveryRow {
  id: number
  organization_id: number
  subscription_id: number
  event_id: string
  type: string
  payload: unknown
  attempts: number
  created_at: Date
  url: string
  secret: string
  is_active: boolean
  subscription_deleted_at: Date | null
}

interface WebhookSettings {
  maxAttempts: number
  retryBaseMs: number
  timeoutMs: number
  allowPrivate: boolean
}

const settingsOf = (app: Application): WebhookSettings => ({
  maxAttempts: app.get('webhookMaxAttempts'),
  retryBaseMs: app.get('webhookRetryBaseMs'),
  timeoutMs: app.get('webhookTimeoutMs'),
  allowPrivate: app.get('webhookAllowPrivate')
})

/**
 * The outbox handler of topic 'webhook': one job posts one delivery (an event to one subscription).
 * What it reads and writes (the delivery, its attempts, the subscription's failing streak) is the
 * worker's own bookkeeping, not a change of the app's records: it goes through the background knex.
 */
export function webhookHandler(app: Application): JobHandler {
  const settings = settingsOf(app)
  return {
    topic: WEBHOOK_TOPIC,
    maxAttempts: settings.maxAttempts,
    retryBaseMs: settings.retryBaseMs,
    maxDelayMs: MAX_DELAY_MS,
    labels: ['delivered'],
    // Read per run: the time limit and the private-address switch apply from the next attempt on.
    run: (job) => deliver(app, settingsOf(app), job),
    onFailed: async (job, error) => {
      const db = app.get('backgroundKnex')
      await db('webhook_deliveries')
        .where({ organization_id: job.organization_id, id: job.payload.delivery_id, status: 'pending' })
        .update({ status: 'failed', last_error: error, next_attempt_at: null, updated_at: db.fn.now() })
    }
  }
}

/** Registers the handler once (mail too: a deactivated subscription's owners are told by e-mail). */
export const webhookDeliveries = (app: Application) => {
  app.configure(mail)
  const worker = app.get('outbox')
  if (!worker.handler(WEBHOOK_TOPIC)) worker.register(webhookHandler(app))
}

async function deliver(app: Application, settings: WebhookSettings, job: OutboxJob): Promise<JobOutcome> {
  const db = app.get('backgroundKnex')
  const delivery: DeliveryRow | undefined = await db('webhook_deliveries as d')
    .join('webhook_subscriptions as s', function () {
      this.on('s.organization_id', 'd.organization_id').andOn('s.id', 'd.subscription_id')
    })
    .where({ 'd.organization_id': job.organization_id, 'd.id': job.payload.delivery_id })
    .first('d.*', 's.url', 's.secret', 's.is_active', 's.deleted_at as subscription_deleted_at')
  if (!delivery) return { status: 'failed', error: 'the delivery no longer exists' }
  if (!delivery.is_active || delivery.subscription_deleted_at) {
    const error = 'the subscription is inactive or deleted'
    await record(db, delivery, { status: 'failed', last_error: error, next_attempt_at: null })
    return { status: 'failed', error }
  }

  const body = JSON.stringify(delivery.payload)
  const timestamp = Math.floor(Date.now() / 1000)
  let statusCode: number | null = null
  let error: string
  try {
    const response = await postWebhook({
      url: delivery.url,
      body,
      timeoutMs: settings.timeoutMs,
      allowPrivate: settings.allowPrivate,
      headers: {
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(delivery.secret, delivery.event_id, timestamp, body)
      }
    })
    statusCode = response.status
    if (statusCode >= 200 && statusCode < 300) {
      await record(db, delivery, { status: 'delivered', last_status_code: statusCode, last_error: null, next_attempt_at: null, delivered_at: db.fn.now() })
      await db('webhook_subscriptions').where({ organization_id: delivery.organization_id, id: delivery.subscription_id }).update({ failing_since: null })
      return { status: 'done', label: 'delivered', result: { status_code: statusCode } }
    }
    error = `the receiver answered ${statusCode}`
  } catch (failure: any) {
    error = String(failure?.message ?? failure).slice(0, 1000)
  }

  const givenUp = job.attempts >= settings.maxAttempts || Date.now() - new Date(delivery.created_at).getTime() >= RETRY_WINDOW_MS
  const delayMs = Math.min(settings.retryBaseMs * 2 ** (job.attempts - 1), MAX_DELAY_MS)
  await record(db, delivery, {
    status: givenUp ? 'failed' : 'pending',
    last_status_code: statusCode,
    last_error: error,
    next_attempt_at: givenUp ? null : db.raw('now() + make_interval(secs => ?)', [delayMs / 1000])
  })
  await noteFailure(app, delivery)
  return givenUp ? { status: 'failed', error } : { status: 'retry', error }
}

/** One attempt more on the delivery row, and its outcome. */
async function record(db: Knex, delivery: DeliveryRow, changes: Record<string, unknown>) {
  await db('webhook_deliveries')
    .where({ organization_id: delivery.organization_id, id: delivery.id })
    .update({ ...changes, attempts: db.raw('attempts + 1'), updated_at: db.fn.now() })
}

/**
 * A failed attempt starts (or continues) the subscription's failing streak; a streak of three
 * days deactivates it and e-mails the organization's owners, in one transaction.
 */
async function noteFailure(app: Application, delivery: DeliveryRow) {
  await app.get('backgroundKnex').transaction(async (trx) => {
    const where = { organization_id: delivery.organization_id, id: delivery.subscription_id }
    await trx('webhook_subscriptions').where(where).update({ failing_since: trx.raw('coalesce(failing_since, (SELECT now()))') })
    // Read after the update rather than in its RETURNING, where Citus allows immutable functions only.
    const subscription = await trx('webhook_subscriptions').where(where)
      .first('url', 'is_active', trx.raw(`failing_since <= now() - make_interval(secs => ${DEACTIVATE_AFTER_S}) AS expired`))
    if (!subscription?.is_active || !subscription.expired) return
    await trx('webhook_subscriptions').where(where).update({ is_active: false, updated_at: trx.fn.now() })
    const owners: { email: string }[] = await trx('organizations_users as m')
      .join('users as u', 'u.id', 'm.user_id')
      .where({ 'm.organization_id': delivery.organization_id, 'm.role': 'owner' })
      .select('u.email')
    for (const owner of owners) {
      await enqueueMail(trx, {
        kind: 'webhook-deactivated',
        organizationId: delivery.organization_id,
        to: owner.email,
        subject: 'A webhook subscription was deactivated',
        text:
          `Every delivery to ${subscription.url} has failed for three days, so webhook subscription ` +
          `${delivery.subscription_id} was deactivated. Fix the receiver, then turn it back on with ` +
          `PATCH /webhook-subscriptions/${delivery.subscription_id} {"is_active": true}; failed deliveries ` +
          'can be sent again with POST /webhook-deliveries/<id> and X-Service-Method: redeliver.'
      })
    }
  })
}
