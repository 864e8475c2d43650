import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { OutboxWorker } from '../outbox/index.js'
import type { JobHandler } from '../outbox/index.js'
import { MAIL_TOPIC } from './outbox.js'
import type { MailPayload } from './outbox.js'
import type { MailTransport } from './transport.js'

export interface MailHandlerOptions {
  logger: Logger
  /** null: no SMTP server configured; messages are written to the log and kept in the outbox as 'logged'. */
  transport: MailTransport | null
  from: string
  /** Attempts before a message is given up as 'failed'. */
  maxAttempts: number
  /** Delay after the first failed attempt; doubled after each further failure, up to an hour. */
  retryBaseMs: number
}

/** The outbox handler of topic 'mail': sends over SMTP ('sent'), or logs when none is configured ('logged'). */
export function mailHandler(options: MailHandlerOptions): JobHandler {
  const { transport, logger } = options
  return {
    topic: MAIL_TOPIC,
    maxAttempts: options.maxAttempts,
    retryBaseMs: options.retryBaseMs,
    labels: ['sent', 'logged'],
    async run(job) {
      const mail = job.payload as MailPayload
      if (!transport) {
        logger.info(
          { outbox_id: job.id, kind: job.kind, to: mail.to, subject: mail.subject, text: mail.text },
          'mail not sent (no SMTP_URL configured); kept in the outbox as logged'
        )
        return { status: 'done', label: 'logged' }
      }
      const { messageId } = await transport.send({
        from: options.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        ...(mail.html ? { html: mail.html } : {})
      })
      return { status: 'done', label: 'sent', result: { message_id: messageId } }
    }
  }
}

/** A worker that runs mail only (operators' scripts and tests that bring their own transport). */
export class MailWorker extends OutboxWorker {
  /** pollIntervalMs: milliseconds between polls for due mail; 0 = only when asked. */
  constructor(private mailOptions: MailHandlerOptions & { db: Knex; pollIntervalMs: number }) {
    super({ db: mailOptions.db, logger: mailOptions.logger, pollIntervalMs: mailOptions.pollIntervalMs })
    this.register(mailHandler(mailOptions))
  }

  async stop() {
    await super.stop()
    this.mailOptions.transport?.close()
  }
}
