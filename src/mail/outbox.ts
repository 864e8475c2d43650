import type { Knex } from 'knex'

/** A message as the code that causes it writes it: delivered later by the mail worker. */
export interface OutgoingMail {
  /** What the message is about, e.g. 'invitation' (for the log and for operators). */
  kind: string
  organizationId?: number | null
  to: string
  subject: string
  text: string
  html?: string
}

export type OutboxStatus = 'pending' | 'sending' | 'sent' | 'logged' | 'failed'

export interface OutboxRow {
  id: number
  organization_id: number | null
  kind: string
  recipient: string
  subject: string
  text_body: string
  html_body: string | null
  status: OutboxStatus
  attempts: number
  next_attempt_at: Date
  last_error: string | null
  message_id: string | null
  sent_at: Date | null
  created_at: Date
  updated_at: Date
}

export const OUTBOX_TABLE = 'mail_outbox'

/**
 * Writes a message to the outbox. Pass the transaction of the change that causes the message:
 * the message then exists exactly when the change does, and sending never slows or fails it.
 */
export async function enqueueMail(trx: Knex | Knex.Transaction, mail: OutgoingMail): Promise<OutboxRow> {
  const [row] = await trx(OUTBOX_TABLE)
    .insert({
      kind: mail.kind,
      organization_id: mail.organizationId ?? null,
      recipient: mail.to,
      subject: mail.subject,
      text_body: mail.text,
      html_body: mail.html ?? null
    })
    .returning('*')
  return row as OutboxRow
}
