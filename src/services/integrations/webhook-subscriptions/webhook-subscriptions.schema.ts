import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps } from '../../../schemas.js'
import { EVENT_TYPES, WILDCARD } from '../../../webhook-events.js'
import { newSecret } from '../webhooks/sender.js'

export const webhookEventName = Type.Union([Type.Literal(WILDCARD), ...EVENT_TYPES.map((type) => Type.Literal(type))], {
  description: "'<resource>.<created|updated|deleted>', or '*' for every event"
})

export const webhookSubscriptionSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    url: Type.String({ minLength: 1, maxLength: 2000, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', description: 'https:// (http:// too outside production)' }),
    events: Type.Array(webhookEventName, { minItems: 1, maxItems: EVENT_TYPES.length + 1, uniqueItems: true }),
    is_active: Type.Boolean(),
    secret: Type.Optional(Type.String({ description: "'whsec_' + base64 of 32 random bytes; returned by create and rotate-secret only" })),
    description: Nullable(Type.String({ maxLength: 500 })),
    failing_since: Nullable(Timestamp),
    created_by_user_id: Nullable(RecordId),
    ...softDeleteTimestamps
  },
  { $id: 'WebhookSubscription', additionalProperties: false }
)
export type WebhookSubscription = Static<typeof webhookSubscriptionSchema>


const writable = Type.Pick(webhookSubscriptionSchema, ['url', 'events', 'is_active', 'description'])

export const webhookSubscriptionDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    url: writable.properties.url,
    events: writable.properties.events,
    is_active: Type.Optional(writable.properties.is_active),
    description: Type.Optional(writable.properties.description)
  },
  { $id: 'WebhookSubscriptionData', additionalProperties: false }
)
export type WebhookSubscriptionData = Static<typeof webhookSubscriptionDataSchema>
export const webhookSubscriptionDataValidator = getValidator(webhookSubscriptionDataSchema, dataValidator)

const storedEvents = async (value: unknown) => (value === undefined ? value : JSON.stringify(value))
export const webhookSubscriptionDataResolver = resolve<any, HookContext>({
  secret: async () => newSecret(),
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  events: storedEvents
})

export const webhookSubscriptionPatchSchema = Type.Partial(writable, { $id: 'WebhookSubscriptionPatch', additionalProperties: false, minProperties: 1 })
export type WebhookSubscriptionPatch = Static<typeof webhookSubscriptionPatchSchema>
export const webhookSubscriptionPatchValidator = getValidator(webhookSubscriptionPatchSchema, dataValidator)
/** Turning a subscription back on starts its failure streak afresh. */
export const webhookSubscriptionPatchResolver = resolve<any, HookContext>({
  events: storedEvents,
  failing_since: async (value, data) => (data.is_active === true ? null : value)
})

export const webhookSubscriptionRotateSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    id: Type.Optional(Type.Integer({ minimum: 1, description: "the record's id, for a call without a path (Socket.io); over REST it is in the path" }))
  },
  { $id: 'WebhookSubscriptionRotate', additionalProperties: false }
)
export const webhookSubscriptionRotateValidator = getValidator(webhookSubscriptionRotateSchema, dataValidator)

export const webhookSubscriptionQuerySchema = Type.Object(
  { ...listQuery(webhookSubscriptionSchema, ['organization_id', 'is_active', 'url', 'created_at', 'updated_at']).properties },
  { $id: 'WebhookSubscriptionQuery', additionalProperties: false }
)
export type WebhookSubscriptionQuery = Static<typeof webhookSubscriptionQuerySchema>
export const webhookSubscriptionQueryValidator = getValidator(webhookSubscriptionQuerySchema, queryValidator)
