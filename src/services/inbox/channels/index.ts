import type { Application, HookContext, NextFunction } from '../../../declarations.js'
import { reencryptUnboundCredentials } from './accounts.js'
import { channelDelivery } from './delivery.js'
import { warnIfKeyDerived } from './secrets.js'
import { channelInbound } from './webhooks.js'

export { channelWebhooks } from './webhooks.js'

/**
 * Channel integrations (docs/channels.md): the outbox handlers that store what the providers'
 * webhooks carried and deliver queued messages. The webhook routes are Koa middleware mounted
 * in front of the body parser (app.ts): their signatures are computed over the raw bytes.
 */
export const channels = (app: Application) => {
  channelInbound(app)
  channelDelivery(app)
  // Registered after the outbox's setup hook, so this runs before its worker starts.
  app.hooks({
    setup: [
      async (_context: HookContext, next: NextFunction) => {
        warnIfKeyDerived(app)
        await reencryptUnboundCredentials(app)
        await next()
      }
    ]
  })
}
