import type { Application } from '../declarations.js'
import { mailHandler } from './worker.js'
import { smtpTransport } from './transport.js'
import { MAIL_TOPIC } from './outbox.js'

export { enqueueMail, MAIL_TOPIC } from './outbox.js'
export type { OutgoingMail, MailPayload } from './outbox.js'
export { tokenLink } from './links.js'
export { MailWorker, mailHandler } from './worker.js'

/**
 * Outgoing mail: a handler of the application's outbox worker (src/outbox). Configured once, by
 * whichever service sends mail first; the SMTP connection closes when the application tears down.
 */
export const mail = (app: Application) => {
  const worker = app.get('outbox')
  if (worker.handler(MAIL_TOPIC)) return
  const smtpUrl = app.get('smtpUrl')
  const transport = smtpUrl ? smtpTransport(smtpUrl) : null
  worker.register(
    mailHandler({
      logger: app.get('logger'),
      transport,
      from: app.get('mailFrom'),
      maxAttempts: app.get('mailMaxAttempts'),
      retryBaseMs: app.get('mailRetryBaseMs')
    })
  )
  app.hooks({ teardown: [async (_context: any, next: any) => { await next(); transport?.close() }] })
}
