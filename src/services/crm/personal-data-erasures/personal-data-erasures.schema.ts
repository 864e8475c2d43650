import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, Timestamp, listQuery } from '../../../schemas.js'

const Counts = (description: string) => Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description })

/** What an erasure leaves behind: who erased which contact when, and how many records of each kind went; no personal data. */
export const personalDataErasureSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    contact_id: { ...RecordId, description: 'the erased contact (its contacts merged into it went with it)' },
    erased_by_user_id: Nullable(RecordId),
    api_key_id: { ...Nullable(RecordId), description: 'the API key of the request, when it came with one' },
    erased_at: Timestamp,
    removed: Counts('records deleted for good, by kind: contacts, conversations, conversation_messages, conversation_files, webchat_sessions, automation_executions, reservations, activities, webhook_deliveries, idempotent_answers'),
    unlinked: Counts('records kept for others that lost the link to the person and the words naming them: deals, activities'),
    cancelled: Counts('what was still to happen: upcoming_reservations (their time is free again), undelivered_messages (never sent)')
  },
  { $id: 'PersonalDataErasure', additionalProperties: false }
)
export type PersonalDataErasure = Static<typeof personalDataErasureSchema>

export const personalDataErasureQuerySchema = Type.Object(
  { ...listQuery(personalDataErasureSchema, ['organization_id', 'contact_id', 'erased_by_user_id', 'erased_at']).properties },
  { $id: 'PersonalDataErasureQuery', additionalProperties: false }
)
export type PersonalDataErasureQuery = Static<typeof personalDataErasureQuerySchema>
export const personalDataErasureQueryValidator = getValidator(personalDataErasureQuerySchema, queryValidator)
