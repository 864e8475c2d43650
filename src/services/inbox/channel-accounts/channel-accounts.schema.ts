import { Type } from '@feathersjs/typebox'
import type { Static, TObject } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, listQuery, softDeleteTimestamps } from '../../../schemas.js'

export const ACCOUNT_CHANNELS = ['whatsapp', 'instagram', 'messenger', 'sms', 'webchat'] as const
export type AccountChannel = (typeof ACCOUNT_CHANNELS)[number]
/** The channels whose webhooks come from Meta (signed with the app secret, verified with hub.verify_token). */
export const META_CHANNELS: readonly AccountChannel[] = ['whatsapp', 'instagram', 'messenger']

const ProviderId = (description: string) => Type.String({ pattern: '^[0-9]{1,64}$', description })
const E164 = Type.String({ pattern: '^\\+[1-9][0-9]{1,14}$', description: 'E.164, e.g. +14155550100' })
const Origin = Type.String({ pattern: '^https?://[^/\\s?#]+$', maxLength: 300, description: 'an origin: scheme, host and port, no path' })
const Secret = Type.String({ minLength: 1, maxLength: 2000 })

/** Public settings per channel (what the provider's console shows; never a secret). */
export const CONFIG_SCHEMAS: Record<AccountChannel, TObject> = {
  whatsapp: Type.Object({
    phone_number_id: ProviderId('the WhatsApp Business phone number id (Meta)'),
    business_account_id: Type.Optional(ProviderId('the WhatsApp Business Account (WABA) id')),
    display_phone_number: Type.Optional(Type.String({ maxLength: 32 }))
  }, { additionalProperties: false }),
  messenger: Type.Object({ page_id: ProviderId('the Facebook page id') }, { additionalProperties: false }),
  instagram: Type.Object({ instagram_account_id: ProviderId('the Instagram professional account id') }, { additionalProperties: false }),
  sms: Type.Object({
    account_sid: Type.String({ pattern: '^AC[0-9a-fA-F]{32}$', description: 'the Twilio Account SID' }),
    from_number: E164
  }, { additionalProperties: false }),
  webchat: Type.Object({
    allowed_origins: Type.Optional(Type.Array(Origin, { maxItems: 50, uniqueItems: true, description: 'sites allowed to open sessions; empty: any' })),
    title: Type.Optional(Type.String({ maxLength: 200 })),
    welcome_message: Type.Optional(Type.String({ maxLength: 2000 })),
    color: Type.Optional(Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: "the widget's accent colour (launcher, header, the visitor's messages): #rrggbb" })),
    position: Type.Optional(Type.Union([Type.Literal('bottom-right'), Type.Literal('bottom-left')], { description: 'the corner of the launcher; default bottom-right' }))
  }, { additionalProperties: false })
}

/** Write-only secrets per channel: stored encrypted, never answered. */
export const CREDENTIAL_SCHEMAS: Record<AccountChannel, TObject | null> = {
  whatsapp: Type.Object({ access_token: Secret, app_secret: Secret }, { additionalProperties: false }),
  messenger: Type.Object({ page_access_token: Secret, app_secret: Secret }, { additionalProperties: false }),
  instagram: Type.Object({ access_token: Secret, app_secret: Secret }, { additionalProperties: false }),
  sms: Type.Object({ auth_token: Secret }, { additionalProperties: false }),
  webchat: null
}

/** The config field holding the provider's id of the account (one live account per id, in any organization). */
export const PROVIDER_ID_FIELD: Record<AccountChannel, string | null> = {
  whatsapp: 'phone_number_id', messenger: 'page_id', instagram: 'instagram_account_id', sms: 'from_number', webchat: null
}

export const configValidators = Object.fromEntries(
  ACCOUNT_CHANNELS.map((channel) => [channel, getValidator(CONFIG_SCHEMAS[channel], dataValidator)])
) as Record<AccountChannel, ReturnType<typeof getValidator>>
export const credentialValidators = Object.fromEntries(
  ACCOUNT_CHANNELS.map((channel) => [channel, CREDENTIAL_SCHEMAS[channel] ? getValidator(CREDENTIAL_SCHEMAS[channel]!, dataValidator) : null])
) as Record<AccountChannel, ReturnType<typeof getValidator> | null>

const ChannelField = Type.Union(ACCOUNT_CHANNELS.map((channel) => Type.Literal(channel)))
const ConfigField = Type.Record(Type.String(), Type.Any(), { description: 'public settings; their fields depend on the channel (docs/channels.md)' })
const CredentialsField = Type.Record(Type.String(), Type.String(), { description: 'write-only; the fields depend on the channel; never answered' })

export const channelAccountSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    channel: ChannelField,
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    is_active: Type.Boolean({ description: 'an inactive account receives nothing (webhooks answered 200 and ignored) and sends nothing' }),
    config: ConfigField,
    webhook_url: Nullable(Type.String({ description: "paste it in the provider's console as the callback URL (null for webchat)" })),
    verify_token: Type.String({ description: "Meta's webhook verify token: paste it next to the callback URL" }),
    widget_token: Nullable(Type.String({ description: 'webchat only: the public token of the site widget' })),
    has_credentials: Type.Boolean({ description: 'whether credentials are stored (stored ones that cannot be read make sends fail with credentials_unreadable: send them again)' }),
    identity_secret: Type.Optional(Type.String({
      description: "webchat only: the key your site's back end signs its users' ids with (docs/channels.md); answered once, by create and by rotate_identity_secret"
    })),
    ...softDeleteTimestamps
  },
  { $id: 'ChannelAccount', additionalProperties: false }
)
export type ChannelAccount = Static<typeof channelAccountSchema>

export const channelAccountDataSchema = Type.Object(
  {
    organization_id: Type.Optional(RecordId),
    channel: ChannelField,
    name: channelAccountSchema.properties.name,
    is_active: Type.Optional(Type.Boolean()),
    config: ConfigField,
    credentials: Type.Optional(CredentialsField)
  },
  { $id: 'ChannelAccountData', additionalProperties: false }
)
export type ChannelAccountData = Static<typeof channelAccountDataSchema>
export const channelAccountDataValidator = getValidator(channelAccountDataSchema, dataValidator)

export const channelAccountPatchSchema = Type.Object(
  {
    name: Type.Optional(channelAccountSchema.properties.name),
    is_active: Type.Optional(Type.Boolean()),
    config: Type.Optional({ ...ConfigField, description: 'replaces the whole config' }),
    credentials: Type.Optional({ ...CredentialsField, description: 'replaces every credential of the account' }),
    rotate_identity_secret: Type.Optional(Type.Literal(true, { description: 'webchat only: a new identity secret replaces the old one, answered once as identity_secret' }))
  },
  { $id: 'ChannelAccountPatch', additionalProperties: false, minProperties: 1 }
)
export type ChannelAccountPatch = Static<typeof channelAccountPatchSchema>
export const channelAccountPatchValidator = getValidator(channelAccountPatchSchema, dataValidator)

export const channelAccountQuerySchema = Type.Object(
  { ...listQuery(channelAccountSchema, ['organization_id', 'channel', 'name', 'is_active', 'created_at', 'updated_at']).properties },
  { $id: 'ChannelAccountQuery', additionalProperties: false }
)
export type ChannelAccountQuery = Static<typeof channelAccountQuerySchema>
export const channelAccountQueryValidator = getValidator(channelAccountQuerySchema, queryValidator)

/** Where the provider calls this account: PUBLIC_URL + /webhooks/<channel>/<webhook key>. */
export const webhookUrlOf = (publicUrl: string, account: { channel: string; webhook_key: string }) =>
  account.channel === 'webchat' ? null : `${publicUrl.replace(/\/$/, '')}/webhooks/${account.channel}/${account.webhook_key}`


