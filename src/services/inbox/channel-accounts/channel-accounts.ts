import { sqlText } from '../../../engine/catalog.js'
import type { Application, HookContext } from '../../../declarations.js'
import { newToken } from '../../../authentication.js'
import { fieldError } from '../../../hooks/errors.js'
import { fieldErrors } from '../../../hooks/validation-messages.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'
import { readCredentials, verifyWithProvider } from '../channels/accounts.js'
import { channelSecretsKey, encryptSecret } from '../channels/secrets.js'
import { newIdentitySecret } from '../channels/webchat-identity.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ChannelAccountService, getOptions } from './channel-accounts.class.js'
import {
  PROVIDER_ID_FIELD, channelAccountDataSchema, channelAccountDataValidator, channelAccountPatchSchema,
  channelAccountPatchValidator, channelAccountQuerySchema, channelAccountQueryValidator, channelAccountSchema,
  configValidators, credentialValidators
} from './channel-accounts.schema.js'
import type { AccountChannel } from './channel-accounts.schema.js'
import { channelAccountMethods, channelAccountPath } from './channel-accounts.shared.js'
import { databaseOf } from '../../../db.js'

export * from './channel-accounts.class.js'
export * from './channel-accounts.schema.js'

type AccountContext = HookContext<ChannelAccountService>

/** Validates a nested object of the body with its channel's schema; errors are named field.subfield. */
async function validateNested(validator: (data: unknown) => Promise<unknown>, value: unknown, field: string) {
  try {
    return await validator(value)
  } catch (error: any) {
    const list = [error?.data, error?.errors].find(Array.isArray)
    const errors = list ? fieldErrors(list) : { '': 'is invalid' }
    const named = Object.fromEntries(Object.entries(errors).map(([key, message]) => [key ? `${field}.${key}` : field, message]))
    throw Object.assign(fieldError(field, 'is invalid'), { errors: named })
  }
}

/**
 * config is checked against its channel's schema and its provider id kept in a column (unique
 * among live accounts); credentials are checked, then verified with the provider together with
 * the config (verifyWithProvider), then encrypted bound to the account's id (AES-256-GCM) before
 * anything stores them. A provider channel needs its credentials from the start: without them
 * nothing could be verified or sent. With an Idempotency-Key the write's transaction is open
 * while the provider answers (at most its time limit).
 */
const checkConfigAndCredentials = async (context: AccountContext) => {
  const data = context.data as Record<string, any>
  const before = context.method === 'patch' ? await loadBefore(context) : undefined
  const channel: AccountChannel = before?.channel ?? data.channel
  let config: Record<string, any> | undefined
  if (data.config !== undefined) {
    config = (await validateNested(configValidators[channel], data.config, 'config')) as Record<string, any>
    const idField = PROVIDER_ID_FIELD[channel]
    data.provider_id = idField ? String(config[idField]) : null
    data.config = JSON.stringify(config)
  }
  const validator = credentialValidators[channel]
  let credentials: Record<string, string> | undefined
  if (data.credentials !== undefined) {
    if (!validator) throw fieldError('credentials', `are not used on ${channel}`)
    credentials = (await validateNested(validator, data.credentials, 'credentials')) as Record<string, string>
  } else if (!before && validator) {
    throw fieldError('credentials', `are required on ${channel}: ${Object.keys((validator as any).schema?.properties ?? {}).join(', ') || 'see docs/channels.md'}`)
  }
  if (!validator || (!config && !credentials)) return
  const usable = credentials ?? readCredentials(context.app, before as { id: number; credentials: string | null })
  if (!usable) throw fieldError('credentials', 'cannot be read: send them again')
  await verifyWithProvider(context.app, channel, config ?? before!.config, usable)
  if (credentials) data.credentials = encryptSecret(channelSecretsKey(context.app), credentials, before?.id ?? (await reserveId(context)))
}

/** The id a new account will have, taken before its insert: its credentials are encrypted bound to it. */
async function reserveId(context: AccountContext): Promise<number> {
  const { rows } = await databaseOf(context.params, context.app.get('knex')).raw("SELECT nextval(pg_get_serial_sequence('channel_accounts', 'id'))::int AS id")
  const data = context.data as Record<string, any>
  data.id = rows[0].id
  return data.id
}

/** The tokens the organization pastes into the provider's console or its site: random, per account. */
const issueTokens = async (context: AccountContext) => {
  const data = context.data as Record<string, any>
  data.webhook_key = newToken()
  data.verify_token = newToken()
  data.widget_token = data.channel === 'webchat' ? newToken() : null
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** The web-chat identity secret this call made, for its answer only. */
    identitySecret?: string
  }
}

/**
 * A web-chat widget's identity secret (src/services/inbox/channels/webchat-identity.ts) is made by the server:
 * with a new widget, and again on PATCH {rotate_identity_secret: true} (which also gives one to
 * a widget made before there were any). Only the call that made it answers it.
 */
const issueIdentitySecret = async (context: AccountContext) => {
  const accountId = await widgetNeedingSecret(context)
  if (accountId === undefined) return
  const { secret, credentials } = newIdentitySecret(context.app, accountId)
  ;(context.data as Record<string, any>).credentials = credentials
  context.params.identitySecret = secret
}

/** The id of the widget this call gives a new identity secret to, if any. */
async function widgetNeedingSecret(context: AccountContext): Promise<number | undefined> {
  const data = context.data as Record<string, any>
  if (context.method === 'create') return data.channel === 'webchat' ? reserveId(context) : undefined
  if (data.rotate_identity_secret === undefined) return undefined
  delete data.rotate_identity_secret
  const before = await loadBefore(context)
  if (before.channel !== 'webchat') throw fieldError('rotate_identity_secret', 'applies to webchat accounts only')
  return before.id
}

const answerIdentitySecret = async (context: AccountContext) => {
  if (context.params.identitySecret) context.result = { ...context.result, identity_secret: context.params.identitySecret } as any
}

export const channelAccount = (app: Application) =>
  tenantResource(app, {
    path: channelAccountPath,
    service: new ChannelAccountService(getOptions(app)),
    methods: channelAccountMethods,
    description: "Connected WhatsApp numbers, Facebook pages, Instagram accounts, Twilio numbers and site widgets (docs/channels.md). Owners and admins create, change and delete them; members read. Credentials are write-only, and the provider is asked whether it accepts them for the account's id before anything is stored (400 on credentials when it refuses, 503 when it cannot be reached). One live account per provider id in any organization (409, only with accepted credentials). $limit at most 50.",
    schemas: { result: channelAccountSchema, data: channelAccountDataSchema, patch: channelAccountPatchSchema, query: channelAccountQuerySchema },
    validators: { query: channelAccountQueryValidator, data: channelAccountDataValidator, patch: channelAccountPatchValidator },
    hidden: ['credentials', 'webhook_key', 'provider_id'],
    // What channelAccountResolver gives a written account, for reads.
    computed: {
      webhook_url: (app) => `CASE WHEN p.channel = 'webchat' THEN NULL ELSE ${sqlText(`${app.get('publicUrl').replace(/\/$/, '')}/webhooks/`)} || p.channel || '/' || p.webhook_key END`,
      has_credentials: `COALESCE(p.credentials, '') <> ''`
    },
    roles: { create: ['owner', 'admin'], patch: ['owner', 'admin'], remove: ['owner', 'admin'] },
    rules: { create: [checkConfigAndCredentials, issueTokens, issueIdentitySecret], patch: [checkConfigAndCredentials, issueIdentitySecret] },
    after: { create: [answerIdentitySecret], patch: [answerIdentitySecret] },
    secretFields: ['identity_secret']
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [channelAccountPath]: ChannelAccountService
  }
}
