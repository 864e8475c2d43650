import { BadRequest, Unavailable } from '@feathersjs/errors'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { explainedServerError } from '../../../hooks/errors.js'
import type { AccountChannel } from '../channel-accounts/channel-accounts.schema.js'
import { ADAPTERS } from './providers/index.js'
import { boundCopy, channelSecretsKey, decryptSecret } from './secrets.js'
import type { ChannelAccountRecord, ProviderUrls } from './providers/types.js'

/** The providers' base URLs (configuration, so that a proxy or a test double can stand in). */
export const providerUrls = (app: Application): ProviderUrls => ({
  metaGraphUrl: app.get('metaGraphUrl').replace(/\/$/, ''),
  twilioApiUrl: app.get('twilioApiUrl').replace(/\/$/, '')
})

/**
 * An account's stored credentials, decrypted; null when there are none or they cannot be read
 * (written for another account's row, or under another key): such an account verifies no
 * webhook and sends nothing until its credentials are entered again.
 */
export function readCredentials(app: Application, row: { id: number; credentials: string | null }): Record<string, string> | null {
  if (!row.credentials) return null
  try {
    return decryptSecret(channelSecretsKey(app), row.credentials, row.id)
  } catch {
    return null
  }
}

/** A channel account with its credentials decrypted, deleted ones included (the caller decides what they may do). */
export async function loadAccount(app: Application, where: Record<string, unknown>, db: Knex = app.get('knex')): Promise<ChannelAccountRecord | undefined> {
  const row = await db('channel_accounts').where(where).first()
  if (!row) return undefined
  const credentials = readCredentials(app, row)
  if (row.credentials && !credentials) app.get('logger').warn({ channel_account_id: row.id }, 'channels: the stored credentials of this account cannot be read; enter them again')
  return { ...row, credentials }
}

/** A live, active account: one that receives and sends. */
export const isLive = (account: ChannelAccountRecord | undefined): account is ChannelAccountRecord =>
  Boolean(account && account.is_active && !account.deleted_at)

/**
 * At start-up, before the worker and the webhooks use them: credentials still in the unbound v1
 * form are re-encrypted bound to the row they sit on (secrets.ts, boundCopy). Several processes
 * may do it at once: a row is written only while it still holds the v1 text read.
 */
export async function reencryptUnboundCredentials(app: Application) {
  const db = app.get('knex')
  const key = channelSecretsKey(app)
  const rows: { organization_id: number; id: number; credentials: string }[] = await db('channel_accounts')
    .select('organization_id', 'id', 'credentials').where('credentials', 'like', 'v1.%')
  let bound = 0
  for (const row of rows) {
    let credentials: string | undefined
    try {
      credentials = boundCopy(key, row.credentials, row.id)
    } catch {
      app.get('logger').warn({ channel_account_id: row.id }, 'channels: v1 credentials that cannot be read are left as they are')
      continue
    }
    bound += await db('channel_accounts').where({ organization_id: row.organization_id, id: row.id, credentials: row.credentials }).update({ credentials })
  }
  if (bound) app.get('logger').info({ accounts: bound }, 'channels: credentials re-encrypted bound to their accounts')
}

const PROVIDER_NAMES: Record<string, string> = { whatsapp: 'Meta', messenger: 'Meta', instagram: 'Meta', sms: 'Twilio' }
/** The API each provider is asked through, and the setting that says where it is. */
const PROVIDER_APIS: Record<string, { api: string; setting: string }> = {
  Meta: { api: "Meta's Graph API", setting: 'META_GRAPH_URL' },
  Twilio: { api: "Twilio's REST API", setting: 'TWILIO_API_URL' }
}

/**
 * The 503 of a provider that could not be asked, saying which one and what to check, in words
 * written for the caller (the provider's own error stays in the log).
 */
function providerUnavailable(provider: string, check: { unreachable?: boolean }) {
  const { api, setting } = PROVIDER_APIS[provider]
  return explainedServerError(new Unavailable(check.unreachable
    ? `${api} could not be reached at ${setting}: check the setting and the network, then try again; nothing was stored`
    : `${api} answered with a temporary error: try again shortly; nothing was stored`))
}

/**
 * A provider id is claimed only with credentials its provider accepts for it: the provider is
 * asked before anything is stored, so someone who types another organization's page id or
 * number with credentials of their own is refused on the credentials (400) and never learns
 * whether that id is connected here; only a verified owner can meet the one-account-per-id 409.
 * A provider that cannot be asked (timeout, network, 5xx, 429) is a 503: nothing is stored.
 */
export async function verifyWithProvider(app: Application, channel: AccountChannel, config: Record<string, any>, credentials: Record<string, string>) {
  const check = await ADAPTERS[channel]!.checkAccount(config, credentials, providerUrls(app))
  if (check.ok) return
  const provider = PROVIDER_NAMES[channel]
  if (check.retryable) throw providerUnavailable(provider, check)
  const message = check.field === 'credentials' ? `were not accepted by ${provider} for this account: ${check.message}` : check.message
  throw new BadRequest(`${provider} did not accept this account`, { errors: { [check.field]: message } })
}
