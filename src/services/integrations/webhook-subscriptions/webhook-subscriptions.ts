import type { Application, HookContext } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { customMethodId } from '../../../hooks/custom-method-id.js'
import { webhookDeliveries } from '../webhooks/delivery.js'
import { refusedAddressOf } from '../webhooks/addresses.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { WebhookSubscriptionService, getOptions } from './webhook-subscriptions.class.js'
import {
  webhookSubscriptionDataResolver, webhookSubscriptionDataSchema, webhookSubscriptionDataValidator, webhookSubscriptionPatchResolver, webhookSubscriptionPatchSchema, webhookSubscriptionPatchValidator, webhookSubscriptionQuerySchema,
  webhookSubscriptionQueryValidator, webhookSubscriptionRotateSchema, webhookSubscriptionRotateValidator, webhookSubscriptionSchema
} from './webhook-subscriptions.schema.js'
import { webhookSubscriptionMethods, webhookSubscriptionPath } from './webhook-subscriptions.shared.js'

export * from './webhook-subscriptions.class.js'
export * from './webhook-subscriptions.schema.js'

/**
 * https:// only in production; http:// too elsewhere (a receiver on a developer's machine). While
 * WEBHOOK_ALLOW_PRIVATE is off, a URL whose host is or resolves to a loopback or private address
 * is refused here rather than by every one of its deliveries (refusedAddressOf says how names are
 * resolved); each delivery still checks the address it connects to.
 */
const checkUrl = async (context: HookContext) => {
  const { url } = context.data as { url?: string }
  if (url === undefined) return context
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw fieldError('url', 'must be a URL like https://example.com/webhooks')
  }
  if (context.app.get('webhookRequireHttps') && parsed.protocol !== 'https:') throw fieldError('url', 'must be an https:// URL')
  if (parsed.username || parsed.password) throw fieldError('url', 'must not carry a user name or password')
  if (!context.app.get('webhookAllowPrivate')) {
    const refused = await refusedAddressOf(parsed.hostname)
    if (refused) {
      const where = refused === parsed.hostname.replace(/^\[|\]$/g, '') ? refused : `${parsed.hostname} (${refused})`
      throw fieldError('url', `must reach a public address: ${where} is a loopback or private address, which deliveries refuse while the service runs with WEBHOOK_ALLOW_PRIVATE off (set WEBHOOK_ALLOW_PRIVATE=true for a receiver on the same machine or network)`)
    }
  }
  return context
}

export const webhookSubscription = (app: Application) => {
  app.configure(webhookDeliveries)
  tenantResource(app, {
    path: webhookSubscriptionPath,
    service: new WebhookSubscriptionService(getOptions(app)),
    methods: webhookSubscriptionMethods,
    description:
      'Webhook subscriptions of an organization (owners and admins): the events posted to a URL, signed as Standard Webhooks ' +
      `say. The secret is returned by create and by rotate-secret only. An organization has at most ${app.get('webhookMaxSubscriptions')} live ` +
      'subscriptions, active or not (WEBHOOK_MAX_SUBSCRIPTIONS): a create beyond that is 400. See docs/integrations.md.',
    schemas: { result: webhookSubscriptionSchema, data: webhookSubscriptionDataSchema, patch: webhookSubscriptionPatchSchema, query: webhookSubscriptionQuerySchema },
    validators: { query: webhookSubscriptionQueryValidator, data: webhookSubscriptionDataValidator, patch: webhookSubscriptionPatchValidator },
    resolvers: { data: webhookSubscriptionDataResolver, patch: webhookSubscriptionPatchResolver },
    hidden: ['secret'],
    roles: { all: ['owner', 'admin'] },
    secretFields: ['secret'],
    rules: { create: [checkUrl], patch: [checkUrl] },
    custom: {
      'rotate-secret': {
        data: webhookSubscriptionRotateValidator,
        docs: {
          byId: true,
          data: webhookSubscriptionRotateSchema,
          result: webhookSubscriptionSchema,
          description: 'POST /webhook-subscriptions/{id}: a new signing secret, returned in this answer only; the old secret stops signing at once.'
        }
      }
    },
    koa: { before: [customMethodId] }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [webhookSubscriptionPath]: WebhookSubscriptionService
  }
}
