import crypto from 'node:crypto'
import type { Knex } from 'knex'
import { enqueueJobs } from './outbox/index.js'
import { withoutSecrets } from './secret-fields.js'
import type { Condition } from './engine/write-guards.js'

/**
 * Webhook events: '<resource>.<created|updated|deleted>' for the resources below, written to the
 * outbox in the transaction of the change (src/hooks/write-transaction.ts calls enqueueEvents).
 */

/** Service path (or path prefix, for the message services of each channel) → the resource's event name. */
const RESOURCES: [path: string, resource: string][] = [
  ['contacts', 'contacts'],
  ['companies', 'companies'],
  ['deals', 'deals'],
  ['deal-products', 'deal-products'],
  ['activities', 'activities'],
  ['reservations', 'reservations'],
  ['conversations', 'conversations'],
  ['conversation-messages-', 'conversation-messages'],
  ['organizations-users-invites', 'invitations']
]

const ACTIONS: Record<string, string> = { create: 'created', patch: 'updated', remove: 'deleted' }

export const WILDCARD = '*'

/** A contact erased on request (docs/privacy.md): its id only, so that receivers erase their copies too. */
export const CONTACT_ERASED = 'contacts.erased'

/** Every event type a subscription may name (besides '*'). */
export const EVENT_TYPES: string[] = [
  ...[...new Set(RESOURCES.map(([, resource]) => resource))].flatMap((resource) => Object.values(ACTIONS).map((action) => `${resource}.${action}`)),
  CONTACT_ERASED
]

export const WEBHOOK_TOPIC = 'webhook'

/** A subscription's events are delivered one at a time, in the order they happened. */
export const orderingKeyOf = (subscriptionId: number) => `webhook:${subscriptionId}`

/** The event a call of a service method causes, if the service's records have events. */
export function eventTypeOf(path: string, method: string): string | undefined {
  const action = ACTIONS[method]
  if (!action) return undefined
  const match = RESOURCES.find(([prefix]) => (prefix.endsWith('-') ? path.startsWith(prefix) : path === prefix))
  return match ? `${match[1]}.${action}` : undefined
}

/**
 * The live, active subscriptions that want any of these event types, in the given organizations
 * (null: in any), as a condition on webhook_subscriptions: the read before a write and the write
 * guard ask the same question.
 */
function subscribed(types: string[], organizationIds: number[]): Condition {
  const events = [...types, WILDCARD].map((type) => JSON.stringify([type]))
  const organizations = organizationIds.length === 0 ? ' AND false' : ` AND organization_id IN (${organizationIds.map(() => '?').join(', ')})`
  return {
    sql: `is_active = true AND deleted_at IS NULL AND (${events.map(() => 'events @> ?::jsonb').join(' OR ')})${organizations}`,
    bindings: [...events, ...organizationIds]
  }
}

const subscribersOf = (db: Knex | Knex.Transaction, types: string[], organizationIds: number[]) => {
  const condition = subscribed(types, organizationIds)
  return db('webhook_subscriptions').whereRaw(condition.sql, condition.bindings)
}

/** Whether a change of these types in any of these organizations would be delivered anywhere (one indexed read). */
export async function hasSubscribers(db: Knex, types: string[], organizationIds: number[]): Promise<boolean> {
  if (types.length === 0 || organizationIds.length === 0) return false
  return Boolean(await subscribersOf(db, types, organizationIds).first('id'))
}

/** The same question as an SQL condition, true when nobody would receive such a change (a write guard). */
export const nobodySubscribed = (types: string[], organizationIds: number[]): Condition => {
  const condition = subscribed(types, organizationIds)
  return { sql: `NOT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE ${condition.sql})`, bindings: condition.bindings }
}

export interface ChangedRecord {
  /** The record as the API returns it. */
  object: Record<string, any>
  /** On updated: the old values of the fields that changed. */
  previous?: Record<string, unknown>
}

/**
 * Writes one event per changed record: a delivery row and an outbox job for each subscription
 * that wants it, inside the caller's transaction. Jobs of one subscription share an ordering
 * key, so the outbox delivers them one at a time in the order they were written. The resource's
 * secret fields (an invitation's token) never enter a payload: anyone the organization lets read
 * its events, or any receiver, would hold them.
 */
export async function enqueueEvents(trx: Knex.Transaction, type: string, records: ChangedRecord[], secretFields: readonly string[]): Promise<number> {
  const organizationIds = [...new Set(records.map((record) => record.object.organization_id).filter((id) => typeof id === 'number'))]
  if (organizationIds.length === 0) return 0
  const subscriptions: { id: number; organization_id: number }[] = await subscribersOf(trx, [type], organizationIds)
    .select('id', 'organization_id')
    .orderBy('id')
  if (subscriptions.length === 0) return 0
  const createdAt = new Date().toISOString()
  const deliveries = records.flatMap((record) => {
    const object = withoutSecrets(record.object, secretFields).answer as Record<string, any>
    const previous = record.previous && (withoutSecrets(record.previous, secretFields).answer as Record<string, unknown>)
    const payload = {
      id: `evt_${crypto.randomUUID().replaceAll('-', '')}`,
      type,
      created_at: createdAt,
      organization_id: object.organization_id,
      data: previous ? { object, previous_attributes: previous } : { object }
    }
    return subscriptions
      .filter((subscription) => subscription.organization_id === object.organization_id)
      .map((subscription) => ({
        organization_id: subscription.organization_id,
        subscription_id: subscription.id,
        event_id: payload.id,
        type,
        payload: JSON.stringify(payload),
        next_attempt_at: trx.fn.now()
      }))
  })
  if (deliveries.length === 0) return 0
  const rows: { id: number; organization_id: number; subscription_id: number }[] = await trx('webhook_deliveries')
    .insert(deliveries)
    .returning(['id', 'organization_id', 'subscription_id'])
  await enqueueJobs(
    trx,
    rows.map((row) => ({
      topic: WEBHOOK_TOPIC,
      organizationId: row.organization_id,
      kind: type,
      payload: { delivery_id: row.id },
      orderingKey: orderingKeyOf(row.subscription_id)
    }))
  )
  return rows.length
}

/** The fields whose value differs between two representations of a record, with their old values (updated_at aside). */
export function previousAttributes(before: Record<string, any>, after: Record<string, any>): Record<string, unknown> | undefined {
  const changed: Record<string, unknown> = {}
  for (const key of Object.keys(after)) {
    if (key === 'updated_at' || !(key in before)) continue
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) changed[key] = before[key]
  }
  return Object.keys(changed).length ? JSON.parse(JSON.stringify(changed)) : undefined
}
