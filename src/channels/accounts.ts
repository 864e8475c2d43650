import type { Knex } from 'knex'
import type { Application } from '../declarations.js'
import { channelSecretsKey, decryptSecret } from './secrets.js'
import type { ChannelAccountRecord, ProviderUrls } from './providers/types.js'

/** The providers' base URLs (configuration, so that a proxy or a test double can stand in). */
export const providerUrls = (app: Application): ProviderUrls => ({
  metaGraphUrl: app.get('metaGraphUrl').replace(/\/$/, ''),
  twilioApiUrl: app.get('twilioApiUrl').replace(/\/$/, '')
})

/** A channel account with its credentials decrypted, deleted ones included (the caller decides what they may do). */
export async function loadAccount(app: Application, where: Record<string, unknown>, db: Knex = app.get('knex')): Promise<ChannelAccountRecord | undefined> {
  const row = await db('channel_accounts').where(where).first()
  if (!row) return undefined
  return { ...row, credentials: row.credentials ? decryptSecret(channelSecretsKey(app), row.credentials) : null }
}

/** A live, active account: one that receives and sends. */
export const isLive = (account: ChannelAccountRecord | undefined): account is ChannelAccountRecord =>
  Boolean(account && account.is_active && !account.deleted_at)
