import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { OUTBOX_TABLE } from './outbox.js'
import type { OutboxRow } from './outbox.js'
import type { MailTransport } from './transport.js'

export interface MailWorkerOptions {
  db: Knex
  logger: Logger
  /** null: no SMTP server configured; messages are written to the log and kept in the outbox. */
  transport: MailTransport | null
  from: string
  /** Milliseconds between polls of the outbox; 0 turns the background loop off (deliverDue only). */
  pollIntervalMs: number
  /** Attempts before a message is given up as 'failed'. */
  maxAttempts: number
  /** Delay after the first failed attempt; doubled after each further failure, up to RETRY_MAX_MS. */
  retryBaseMs: number
}

export interface DeliveryReport {
  sent: number
  logged: number
  /** Send failed; the message waits for its next attempt. */
  retrying: number
  /** Send failed for the last allowed time; the message stays 'failed'. */
  failed: number
}

const BATCH_SIZE = 20
const RETRY_MAX_MS = 60 * 60 * 1000
// A claimed message belongs to its worker for this long. Should the worker die between claim and
// mark, another worker takes the message over once the lease has run out.
const CLAIM_LEASE_SECONDS = 120

/**
 * Drains the transactional outbox: claims due messages, sends them, marks them.
 *
 * Several instances may run at once. A claim is one statement that locks the due rows with
 * FOR UPDATE SKIP LOCKED and moves them to 'sending' with a lease, so a message is claimed by
 * exactly one worker; the send happens after the claim has committed (no transaction held
 * open during SMTP), and the mark follows. A failed send goes back to 'pending' with an
 * exponential backoff; after maxAttempts it stays 'failed'.
 */
export class MailWorker {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<unknown> | undefined
  private stopped = true

  constructor(private options: MailWorkerOptions) {}

  start() {
    this.stopped = false
    if (this.options.pollIntervalMs > 0) this.schedule()
  }

  async stop() {
    this.stopped = true
    clearTimeout(this.timer)
    await this.running
    this.options.transport?.close()
  }

  /** Delivers every message that is due now; returns what happened to them. */
  async deliverDue(): Promise<DeliveryReport> {
    const report: DeliveryReport = { sent: 0, logged: 0, retrying: 0, failed: 0 }
    for (;;) {
      const claimed = await this.claim()
      if (claimed.length === 0) return report
      for (const message of claimed) {
        const outcome = await this.deliver(message)
        report[outcome] += 1
      }
    }
  }

  private schedule() {
    this.timer = setTimeout(() => {
      this.running = this.deliverDue()
        .catch((error) => this.options.logger.error({ err: error }, 'mail worker: polling the outbox failed'))
        .finally(() => {
          this.running = undefined
          if (!this.stopped) this.schedule()
        })
    }, this.options.pollIntervalMs)
    this.timer.unref()
  }

  private async claim(): Promise<OutboxRow[]> {
    const { db } = this.options
    const result = await db.raw(
      `WITH due AS MATERIALIZED (
         SELECT id FROM ${OUTBOX_TABLE}
         WHERE status IN ('pending', 'sending') AND next_attempt_at <= now()
         ORDER BY next_attempt_at, id
         LIMIT ?
         FOR UPDATE SKIP LOCKED
       )
       UPDATE ${OUTBOX_TABLE} AS m
       SET status = 'sending', attempts = m.attempts + 1,
           next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
       FROM due WHERE m.id = due.id
       RETURNING m.*`,
      [BATCH_SIZE, CLAIM_LEASE_SECONDS]
    )
    return (result.rows as OutboxRow[]).sort((a, b) => a.id - b.id)
  }

  private async deliver(message: OutboxRow): Promise<keyof DeliveryReport> {
    const { transport, logger } = this.options
    if (!transport) {
      logger.info(
        { outbox_id: message.id, kind: message.kind, to: message.recipient, subject: message.subject, text: message.text_body },
        'mail not sent (no SMTP_URL configured); kept in the outbox as logged'
      )
      await this.mark(message, { status: 'logged', last_error: null })
      return 'logged'
    }
    try {
      const { messageId } = await transport.send({
        from: this.options.from,
        to: message.recipient,
        subject: message.subject,
        text: message.text_body,
        ...(message.html_body ? { html: message.html_body } : {})
      })
      await this.mark(message, { status: 'sent', sent_at: this.options.db.fn.now(), message_id: messageId, last_error: null })
      logger.info({ outbox_id: message.id, kind: message.kind, attempts: message.attempts }, 'mail sent')
      return 'sent'
    } catch (error: any) {
      return this.retryLater(message, error)
    }
  }

  private async retryLater(message: OutboxRow, error: any): Promise<keyof DeliveryReport> {
    const { maxAttempts, retryBaseMs, logger, db } = this.options
    const lastError = String(error?.message ?? error).slice(0, 1000)
    if (message.attempts >= maxAttempts) {
      await this.mark(message, { status: 'failed', last_error: lastError })
      logger.error({ outbox_id: message.id, kind: message.kind, attempts: message.attempts, err: lastError }, 'mail failed for good')
      return 'failed'
    }
    const delayMs = Math.min(retryBaseMs * 2 ** (message.attempts - 1), RETRY_MAX_MS)
    await this.mark(message, {
      status: 'pending',
      last_error: lastError,
      next_attempt_at: db.raw('now() + make_interval(secs => ?)', [delayMs / 1000])
    })
    logger.warn({ outbox_id: message.id, kind: message.kind, attempts: message.attempts, retry_in_ms: delayMs, err: lastError }, 'mail not sent; will retry')
    return 'retrying'
  }

  /** Records the outcome, only while the claim is still ours (same attempt, still 'sending'). */
  private async mark(message: OutboxRow, changes: Record<string, unknown>) {
    await this.options.db(OUTBOX_TABLE)
      .where({ id: message.id, status: 'sending', attempts: message.attempts })
      .update({ ...changes, updated_at: this.options.db.fn.now() })
  }
}
