import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { enqueueJob } from '../../../outbox/index.js'
import type { JobOutcome, OutboxJob } from '../../../outbox/index.js'
import { webhookUrlOf } from '../channel-accounts/channel-accounts.schema.js'
import { isLive, loadAccount, providerUrls } from './accounts.js'
import { recordFailed, recordSent } from './inbound.js'
import { ADAPTERS } from './providers/index.js'

export const DELIVERY_TOPIC = 'channel-message'

interface DeliveryPayload {
  message_id: number
}

/**
 * Writes the delivery job of a queued message in the transaction that stores it, and has the
 * worker run it as soon as that transaction commits. The jobs of one conversation run in order.
 */
export async function queueDelivery(app: Application, trx: Knex.Transaction, message: { id: number; organization_id: number; conversation_id: number; channel: string }) {
  await enqueueJob(trx, {
    topic: DELIVERY_TOPIC,
    kind: message.channel,
    organizationId: message.organization_id,
    payload: { message_id: message.id } satisfies DeliveryPayload,
    orderingKey: `conversation:${message.organization_id}:${message.conversation_id}`
  })
  app.get('outbox').kickAfterCommit(trx)
}

/**
 * Delivers one queued message through its provider's adapter. A message that already has its
 * provider id (a job run again after its lease ran out) is not sent again. A timeout, a network
 * error, a 5xx or a 429 is retried (the outbox's backoff, or the provider's Retry-After); any
 * other refusal is final: the message is 'failed' with the provider's {code, message}.
 */
async function deliver(app: Application, job: OutboxJob<DeliveryPayload>): Promise<JobOutcome> {
  const db = app.get('knex')
  const message = await db('conversation_messages').where({ organization_id: job.organization_id, id: job.payload.message_id }).first()
  if (!message || message.deleted_at) return { status: 'done', label: 'skipped' }
  if (message.status !== 'queued' || message.provider_message_id) return { status: 'done', label: 'sent', result: { provider_message_id: message.provider_message_id } }
  const account = await loadAccount(app, { organization_id: message.organization_id, id: message.channel_account_id })
  const adapter = account && ADAPTERS[account.channel]
  if (!isLive(account) || !adapter) {
    const error = { code: 'account_unavailable', message: 'the channel account is deleted or inactive' }
    await recordFailed(app, { organization_id: message.organization_id, channel: message.channel }, message.id, error)
    return { status: 'failed', error: error.message }
  }
  if (!account.credentials) {
    const error = { code: 'credentials_unreadable', message: "the channel account's credentials cannot be read: enter them again" }
    await recordFailed(app, account, message.id, error)
    return { status: 'failed', error: error.message }
  }
  const [contact, files] = await Promise.all([
    db('contacts').join('conversations', function () {
      this.on('conversations.organization_id', 'contacts.organization_id').andOn('conversations.contact_id', 'contacts.id')
    }).select('contacts.*').where({ 'conversations.organization_id': message.organization_id, 'conversations.id': message.conversation_id }).first(),
    message.file_ids.length
      ? db('conversation_files').select('url', 'file_type', 'file_name').where({ organization_id: message.organization_id }).whereIn('id', message.file_ids).orderBy('id')
      : []
  ])
  const webhookUrl = webhookUrlOf(app.get('publicUrl'), account)
  const outcome = await adapter.send(
    { message, contact, files, statusCallbackUrl: webhookUrl && `${webhookUrl}/status` },
    account,
    providerUrls(app)
  )
  if (outcome.ok) {
    await recordSent(app, account, message.id, outcome.providerMessageId)
    return { status: 'done', label: 'sent', result: { provider_message_id: outcome.providerMessageId } }
  }
  const text = `${outcome.error.code}: ${outcome.error.message}`
  if (outcome.retryable && job.attempts < app.get('messageMaxAttempts')) return { status: 'retry', error: text, retryAfterMs: outcome.retryAfterMs }
  // Refused for good, or the last attempt: the message says so before the job is closed.
  const error = outcome.retryable ? { code: 'delivery_failed', message: `no delivery after ${job.attempts} attempts; last: ${text}` } : outcome.error
  await recordFailed(app, account, message.id, error)
  return { status: 'failed', error: text, result: { error } }
}

/** The handler of channel-message jobs on the application's outbox worker. */
export const channelDelivery = (app: Application) => {
  app.get('outbox').register({
    topic: DELIVERY_TOPIC,
    maxAttempts: app.get('messageMaxAttempts'),
    retryBaseMs: app.get('messageRetryBaseMs'),
    labels: ['sent', 'skipped'],
    run: (job) => deliver(app, job as OutboxJob<DeliveryPayload>),
    // Given up after a thrown error on the last attempt: the message says so instead of staying 'queued'.
    onFailed: async (job, error) => {
      const message = await app.get('knex')('conversation_messages').first('channel').where({ organization_id: job.organization_id, id: job.payload.message_id })
      if (message) await recordFailed(app, { organization_id: job.organization_id!, channel: message.channel }, job.payload.message_id, { code: 'delivery_failed', message: error })
    }
  })
}
