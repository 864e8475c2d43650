import { afterAll, beforeAll, beforeEach } from 'vitest'
import { Webhook } from 'standardwebhooks'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'
import { startReceiver } from './receiver.js'
import type { Receiver, ReceivedRequest } from './receiver.js'

// Generous: the receiver shares this process's event loop with the embedded database.
export const TIMEOUT_MS = 1000

export interface WebhookWorld {
  t: TestApp
  acme: Tenant
  globex: Tenant
  receiver: Receiver
}

/** The request's event, once its Standard Webhooks signature is verified with the subscription's secret. */
export const verify = (secret: string, request: ReceivedRequest) => new Webhook(secret).verify(request.body, request.headers) as any

/**
 * The set-up of the webhook tests: an app that may deliver to loopback with short retries, Acme
 * and Globex, and a receiver on loopback; each test starts with no subscriptions and an empty
 * receiver. `ready` receives them once they exist; the helpers run the outbox as the tests need.
 */
export function useWebhookApp(ready: (world: WebhookWorld) => void) {
  const world = {} as WebhookWorld
  useApp({ tenants: ['Acme', 'Globex'], config: { webhookAllowPrivate: true, webhookRetryBaseMs: 20, webhookTimeoutMs: TIMEOUT_MS, webhookMaxAttempts: 5 } }, (app) => {
    world.t = app.t
    ;[world.acme, world.globex] = app.tenants
  })
  beforeAll(async () => {
    world.receiver = await startReceiver()
    ready(world)
  })
  afterAll(async () => {
    await world.receiver?.close()
  })
  beforeEach(async () => {
    // Each test starts with no subscriptions, so that events of one test never reach the next.
    // Across organizations: the background pool (on Citus the requests' pool refuses multi-shard statements).
    await world.t.app.get('backgroundKnex')('webhook_subscriptions').update({ deleted_at: world.t.db.fn.now() })
    world.t.app.set('webhookAllowPrivate', true)
    world.receiver.reset()
  })

  /** Runs the outbox until the receiver has `count` requests (retries wait out their short backoff). */
  async function receive(count: number, timeoutMs = 5000) {
    const { t, receiver } = world
    const started = Date.now()
    while (receiver.received.length < count) {
      if (Date.now() - started > timeoutMs) throw new Error(`the receiver got ${receiver.received.length} of ${count} requests`)
      await t.app.get('outbox').deliverDue()
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    return receiver.received.slice(0, count)
  }

  /** Runs the outbox until nothing is due or waiting for a retry. */
  async function drain() {
    const { t, acme, globex } = world
    for (let i = 0; i < 100; i++) {
      await t.app.get('outbox').deliverDue()
      const waiting = await t.db('outbox_jobs')
        .where({ topic: 'webhook' })
        .whereIn('organization_id', [acme.organization.id, globex.organization.id])
        .whereIn('status', ['pending', 'running'])
        .first('id')
      if (!waiting) return
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error('webhook jobs still waiting')
  }

  /** The one delivery of a subscription, once `ready` holds for it (the worker may still be running the attempt). */
  async function deliveryOnce(subscriptionId: number, isReady: (delivery: any) => boolean) {
    const { t, acme } = world
    for (let i = 0; i < 200; i++) {
      const [delivery] = (await t.http().get('/webhook-deliveries').set(acme.key).query({ subscription_id: subscriptionId })).body.data
      if (delivery && isReady(delivery)) return delivery
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`delivery of subscription ${subscriptionId} never became ready`)
  }

  const subscribe = async (tenant: Tenant, body: Record<string, unknown>) => {
    const res = await world.t.http().post('/webhook-subscriptions').set(tenant.key).send({ url: world.receiver.url(), events: ['*'], ...body })
    if (res.status !== 201) throw new Error(`subscribe → ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }

  return { receive, drain, deliveryOnce, subscribe }
}
