import type { Knex } from 'knex'
import { enqueueJob } from '../outbox/index.js'
import type { OutboxJob } from '../outbox/index.js'

/** A message as the code that causes it writes it: delivered later by the outbox worker. */
export interface OutgoingMail {
  /** What the message is about, e.g. 'invitation' (for the log and for operators). */
  kind: string
  organizationId?: number | null
  to: string
  subject: string
  text: string
  html?: string
}

export const MAIL_TOPIC = 'mail'

export interface MailPayload {
  to: string
  subject: string
  text: string
  html?: string
}

/**
 * Writes a message to the outbox. Pass the transaction of the change that causes the message:
 * the message then exists exactly when the change does, and sending never slows or fails it.
 */
export async function enqueueMail(trx: Knex | Knex.Transaction, mail: OutgoingMail): Promise<OutboxJob<MailPayload>> {
  const { kind, organizationId, ...payload } = mail
  return (await enqueueJob(trx, { topic: MAIL_TOPIC, kind, organizationId, payload: { ...payload } })) as OutboxJob<MailPayload>
}
