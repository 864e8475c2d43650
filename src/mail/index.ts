import type { Application, HookContext, NextFunction } from '../declarations.js'
import { MailWorker } from './worker.js'
import { smtpTransport } from './transport.js'

export { enqueueMail } from './outbox.js'
export { tokenLink } from './links.js'
export type { OutgoingMail, OutboxRow } from './outbox.js'
export { MailWorker } from './worker.js'
export type { DeliveryReport } from './worker.js'

declare module '../declarations.js' {
  interface Configuration {
    mailWorker: MailWorker
  }
}

/**
 * Outgoing mail: the outbox worker starts with the application (app.setup, which listen() and
 * the tests call) and stops before the database pool closes on app.teardown. Configured once,
 * by whichever service sends mail first.
 */
export const mail = (app: Application) => {
  if (app.get('mailWorker')) return
  const smtpUrl = app.get('smtpUrl')
  const worker = new MailWorker({
    db: app.get('knex'),
    logger: app.get('logger'),
    transport: smtpUrl ? smtpTransport(smtpUrl) : null,
    from: app.get('mailFrom'),
    pollIntervalMs: app.get('mailPollIntervalMs'),
    maxAttempts: app.get('mailMaxAttempts'),
    retryBaseMs: app.get('mailRetryBaseMs')
  })
  app.set('mailWorker', worker)
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
