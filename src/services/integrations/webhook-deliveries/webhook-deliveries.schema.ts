import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery, timestamps } from '../../../schemas.js'

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const

export const webhookDeliverySchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    subscription_id: RecordId,
    event_id: Type.String({ description: 'webhook-id: the same on every attempt and redelivery' }),
    type: Type.String({ description: "e.g. 'contacts.created'" }),
    status: Type.Union(WEBHOOK_DELIVERY_STATUSES.map((status) => Type.Literal(status))),
    attempts: Type.Integer({ minimum: 0 }),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    next_attempt_at: Nullable(Timestamp),
    delivered_at: Nullable(Timestamp),
    payload: Type.Object({}, { additionalProperties: true, description: 'The JSON body posted: {id, type, created_at, organization_id, data}' }),
    ...timestamps
  },
  { $id: 'WebhookDelivery', additionalProperties: false }
)
export type WebhookDelivery = Static<typeof webhookDeliverySchema>

export const webhookDeliveryRedeliverSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    id: Type.Optional(Type.Integer({ minimum: 1, description: "the record's id, for a call without a path (Socket.io); over REST it is in the path" }))
  },
  { $id: 'WebhookDeliveryRedeliver', additionalProperties: false }
)
export const webhookDeliveryRedeliverValidator = getValidator(webhookDeliveryRedeliverSchema, dataValidator)

export const webhookDeliveryQuerySchema = Type.Object(
  {
    ...listQuery(webhookDeliverySchema, ['organization_id', 'subscription_id', 'event_id', 'type', 'status', 'created_at', 'delivered_at']).properties
  },
  { $id: 'WebhookDeliveryQuery', additionalProperties: false }
)
export type WebhookDeliveryQuery = Static<typeof webhookDeliveryQuerySchema>
export const webhookDeliveryQueryValidator = getValidator(webhookDeliveryQuerySchema, queryValidator)
