import type { Knex } from 'knex'
import { senderPhone } from '../../../lib/phone-numbers.js'
import type { Sender } from './providers/types.js'

/** The contact columns holding a sender's proven identity on a channel. */
const IDENTITY_COLUMNS: [keyof Who, string][] = [
  ['whatsappWaId', 'channel_whatsapp_wa_id'],
  ['whatsappUserId', 'channel_whatsapp_user_id'],
  ['messengerUserId', 'channel_messenger_user_id'],
  ['instagramUserId', 'channel_instagram_user_id'],
  ['webchatUserId', 'external_id']
]

/** A sender is someone: at least one identity, a phone or an e-mail. */
export interface Who extends Sender {
  /** What the sender says their e-mail is: recorded on a new contact, never matched (anyone can type anyone's address). */
  email?: string
  /** A web-chat user id signed by the site (webchat-identity.ts): the contact whose external_id it is. */
  webchatUserId?: string
}

/** Told of a contact the lookup created or completed (its contacts event, after the caller's commit). */
export type ContactChange = (event: 'created' | 'patched', row: Record<string, unknown>) => void

/**
 * The organization's contact of a sender, or a new one: matched by a channel identity (WhatsApp
 * wa_id or business-scoped id, Messenger or Instagram id, a signed web-chat user id), then by
 * phone in E.164; created with the profile name (else the phone) otherwise. The identities the
 * contact lacked are filled in. Runs under a transaction-scoped advisory lock on the sender, so
 * simultaneous first messages of one person create one contact. Answers the contact row.
 */
export async function contactOfSender(trx: Knex.Transaction, organizationId: number, who: Who, fallbackName: string, changed?: ContactChange) {
  const identities = IDENTITY_COLUMNS.filter(([key]) => who[key]).map(([key, column]) => [column, String(who[key])] as const)
  const phone = who.phone ? senderPhone(who.phone) : null
  const email = who.email?.trim().toLowerCase()
  if (identities.length || phone) {
    await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [organizationId, JSON.stringify([identities, phone?.phone_e164 ?? ''])])
    const candidates = trx('contacts').select('contacts.*')
      .where('organization_id', organizationId).whereNull('deleted_at')
      .where((q) => {
        for (const [column, value] of identities) q.orWhere(column, value)
        if (phone) q.orWhere('phone_e164', phone.phone_e164)
      })
    // An identity match first, then a phone match; the oldest contact among equals.
    const ranked = identities.length
      ? candidates.orderByRaw(`(${identities.map(([column]) => `${column} = ?`).join(' OR ')}) DESC NULLS LAST`, identities.map(([, value]) => value))
      : candidates
    const found = await ranked.orderBy('id').first()
    if (found) {
      const missing = Object.fromEntries(identities.filter(([column]) => !found[column]))
      if (Object.keys(missing).length === 0) return found
      const [updated] = await trx('contacts').where({ organization_id: organizationId, id: found.id }).update({ ...missing, updated_at: trx.fn.now() }).returning('*')
      changed?.('patched', updated)
      return updated
    }
  }
  const [firstName, ...rest] = (who.name?.trim() || who.phone || fallbackName).split(/\s+/)
  const [row] = await trx('contacts').insert({
    organization_id: organizationId,
    first_name: firstName.slice(0, 200),
    last_name: rest.join(' ').slice(0, 200) || null,
    email: email ?? null,
    phone: who.phone ?? null,
    // The sender's country, so that the contact is found by phone search in its region.
    phone_e164: phone?.phone_e164 ?? null,
    phone_country_code: phone?.phone_country_code ?? null,
    phone_country_iso: phone?.phone_country_iso ?? null,
    ...Object.fromEntries(identities)
  }).returning('*')
  changed?.('created', row)
  return row
}
