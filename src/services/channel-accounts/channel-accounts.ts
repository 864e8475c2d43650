import { sqlText } from '../../engine/catalog.js'
import type { Application, HookContext } from '../../declarations.js'
import { newToken } from '../../authentication.js'
import { fieldError, fieldErrors } from '../../hooks/errors.js'
import { loadBefore } from '../../hooks/tenant-scope.js'
import { channelSecretsKey, encryptSecret } from '../../channels/secrets.js'
import { tenantResource } from '../../engine/tenant-resource.js'
import { ChannelAccountService, getOptions } from './channel-accounts.class.js'
import {
  PROVIDER_ID_FIELD, channelAccountDataSchema, channelAccountDataValidator, channelAccountExternalResolver, channelAccountPatchSchema,
  channelAccountPatchValidator, channelAccountQuerySchema, channelAccountQueryValidator, channelAccountResolver, channelAccountSchema,
  configValidators, credentialValidators
} from './channel-accounts.schema.js'
import type { AccountChannel } from './channel-accounts.schema.js'
import { channelAccountMethods, channelAccountPath } from './channel-accounts.shared.js'

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
 * among live accounts); credentials are checked, then encrypted (AES-256-GCM) before anything
 * stores them. A provider channel needs its credentials from the start: without them nothing
 * could be verified or sent.
 */
const checkConfigAndCredentials = async (context: AccountContext) => {
  const data = context.data as Record<string, any>
  const channel: AccountChannel = context.method === 'create' ? data.channel : (await loadBefore(context)).channel
  if (data.config !== undefined) {
    const config = (await validateNested(configValidators[channel], data.config, 'config')) as Record<string, any>
    const idField = PROVIDER_ID_FIELD[channel]
    data.provider_id = idField ? String(config[idField]) : null
    data.config = JSON.stringify(config)
  }
  const validator = credentialValidators[channel]
  if (data.credentials !== undefined) {
    if (!validator) throw fieldError('credentials', `are not used on ${channel}`)
    const credentials = await validateNested(validator, data.credentials, 'credentials')
    data.credentials = encryptSecret(channelSecretsKey(context.app), credentials as Record<string, unknown>)
  } else if (context.method === 'create' && validator) {
    throw fieldError('credentials', `are required on ${channel}: ${Object.keys((validator as any).schema?.properties ?? {}).join(', ') || 'see docs/channels.md'}`)
  }
}

/** The tokens the organization pastes into the provider's console or its site: random, per account. */
const issueTokens = async (context: AccountContext) => {
  const data = context.data as Record<string, any>
  data.webhook_key = newToken()
  data.verify_token = newToken()
  data.widget_token = data.channel === 'webchat' ? newToken() : null
}

export const channelAccount = (app: Application) =>
  tenantResource(app, {
    path: channelAccountPath,
    service: new ChannelAccountService(getOptions(app)),
    methods: channelAccountMethods,
    description: "Connected WhatsApp numbers, Facebook pages, Instagram accounts, Twilio numbers and site widgets (docs/channels.md). Owners and admins create, change and delete them; members read. Credentials are write-only. One live account per provider id in any organization (409). $limit at most 50.",
    schemas: { result: channelAccountSchema, data: channelAccountDataSchema, patch: channelAccountPatchSchema, query: channelAccountQuerySchema },
    validators: { query: channelAccountQueryValidator, data: channelAccountDataValidator, patch: channelAccountPatchValidator },
    resolvers: { result: [channelAccountResolver], external: channelAccountExternalResolver },
    // What channelAccountResolver gives a written account, for reads.
    computed: {
      webhook_url: (app) => `CASE WHEN p.channel = 'webchat' THEN NULL ELSE ${sqlText(`${app.get('publicUrl').replace(/\/$/, '')}/webhooks/`)} || p.channel || '/' || p.webhook_key END`,
      has_credentials: `COALESCE(p.credentials, '') <> ''`
    },
    roles: { create: ['owner', 'admin'], patch: ['owner', 'admin'], remove: ['owner', 'admin'] },
    rules: { create: [checkConfigAndCredentials, issueTokens], patch: [checkConfigAndCredentials] }
  })

declare module '../../declarations.js' {
  interface ServiceTypes {
    [channelAccountPath]: ChannelAccountService
  }
}
