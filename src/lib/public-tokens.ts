import type { Knex } from 'knex'

/**
 * Which organization a public token belongs to: a web-chat visitor's token and a reservation's
 * manage token name no organization, and the routes that take them (/public/webchat/messages,
 * /public/reservations/<token>/cancel) find it here by the token's hash before they read the
 * session or the reservation in that organization. On Citus this table is distributed by the
 * hash (docs/scaling.md), so both reads are single-shard statements; elsewhere it is one primary
 * key lookup more per such request.
 */
export async function rememberToken(trx: Knex.Transaction, tokenHash: string, organizationId: number) {
  await trx('public_tokens').insert({ token_hash: tokenHash, organization_id: organizationId })
}

export async function organizationOfToken(db: Knex | Knex.Transaction, tokenHash: string): Promise<number | undefined> {
  const row = await db('public_tokens').select('organization_id').where('token_hash', tokenHash).first()
  return row?.organization_id
}

/** Forgets tokens whose session or reservation is gone (an erasure). */
export async function forgetTokens(trx: Knex.Transaction, organizationId: number, tokenHashes: string[]) {
  if (tokenHashes.length === 0) return
  await trx('public_tokens').where('organization_id', organizationId).whereIn('token_hash', tokenHashes).delete()
}
