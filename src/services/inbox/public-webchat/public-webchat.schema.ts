import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp } from '../../../schemas.js'

export const webchatSessionDataSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: "what the visitor says their name is: recorded on the session's contact" })),
    email: Type.Optional(Type.String({
      format: 'email', maxLength: 320,
      description: 'what the visitor says their e-mail is: recorded on the contact of an anonymous session, never used to find an existing contact or thread'
    })),
    user_id: Type.Optional(Type.String({
      minLength: 1, maxLength: 200,
      description: "your site's id of its signed-in user; with a valid user_hash, the session joins the contact whose external_id it is (created when there is none) and their thread"
    })),
    user_hash: Type.Optional(Type.String({
      pattern: '^[0-9a-fA-F]{64}$',
      description: "hex HMAC-SHA256 of user_id under the widget's identity_secret, computed by your site's back end"
    }))
  },
  { $id: 'WebchatSessionData', additionalProperties: false }
)
export type WebchatSessionData = Static<typeof webchatSessionDataSchema>
export const webchatSessionDataValidator = getValidator(webchatSessionDataSchema, dataValidator)

export const webchatSessionSchema = Type.Object(
  {
    visitor_token: Type.String({ description: 'send it as X-Visitor-Token (REST) or auth.visitorToken (Socket.io); keep it in the browser' }),
    conversation_id: RecordId,
    title: Nullable(Type.String()),
    welcome_message: Nullable(Type.String())
  },
  { $id: 'WebchatSession', additionalProperties: false }
)

/** The accent colour of a widget whose config names none. */
export const DEFAULT_COLOR = '#1f5fbf'

/** What the widget shows before a session: public settings only (never allowed_origins or secrets). */
export const webchatConfigSchema = Type.Object(
  {
    title: Nullable(Type.String()),
    welcome_message: Nullable(Type.String()),
    color: Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: `the accent colour; ${DEFAULT_COLOR} when the account names none` }),
    position: Type.Union([Type.Literal('bottom-right'), Type.Literal('bottom-left')])
  },
  { $id: 'WebchatConfig', additionalProperties: false }
)
export type WebchatConfig = Static<typeof webchatConfigSchema>
export const webchatConfigQueryValidator = getValidator(Type.Object({}, { $id: 'WebchatConfigQuery', additionalProperties: false }), queryValidator)

export const webchatMessageDataSchema = Type.Object(
  { content: Type.String({ minLength: 1, maxLength: 5000, pattern: '\\S' }) },
  { $id: 'WebchatMessageData', additionalProperties: false }
)
export type WebchatMessageData = Static<typeof webchatMessageDataSchema>
export const webchatMessageDataValidator = getValidator(webchatMessageDataSchema, dataValidator)

export const webchatMessageQuerySchema = Type.Object(
  {
    created_at: Type.Optional(Type.Object({ $gt: Timestamp }, { additionalProperties: false })),
    id: Type.Optional(Type.Object({ $gt: RecordId }, { additionalProperties: false, description: 'only messages after this one (the widget catching up after a reconnect)' })),
    $limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 50 }))
  },
  { $id: 'WebchatMessageQuery', additionalProperties: false }
)
export type WebchatMessageQuery = Static<typeof webchatMessageQuerySchema>
export const webchatMessageQueryValidator = getValidator(webchatMessageQuerySchema, queryValidator)

/** A message as the visitor sees it: no notes, no internal fields. */
export const webchatMessageSchema = Type.Object(
  {
    id: RecordId,
    conversation_id: RecordId,
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { description: "'inbound': the visitor's; 'outbound': the team's" }),
    sender_type: Type.String(),
    content: Type.String(),
    content_type: Type.String(),
    files: Type.Array(Type.Object({ file_name: Type.String(), file_type: Type.String(), url: Type.String() })),
    created_at: Timestamp
  },
  { $id: 'WebchatMessage', additionalProperties: false }
)
export type WebchatMessage = Static<typeof webchatMessageSchema>

export const webchatMessageListSchema = Type.Object({ data: Type.Array(webchatMessageSchema) }, { $id: 'WebchatMessageList', additionalProperties: false })
