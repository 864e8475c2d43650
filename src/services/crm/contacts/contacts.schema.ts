import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { personFields } from '../../../lib/person-fields.js'
import { Nullable, RecordId, UserSummary, listQuery, searchFields, searchResult, softDeleteTimestamps, ExternalId } from '../../../schemas.js'

const CompanySummary = Type.Object({ id: RecordId, name: Type.String() })
const Text = (maxLength: number) => Nullable(Type.String({ maxLength }))

export const SEARCH_MODES = ['name', 'email', 'phone'] as const

export const contactSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    ...personFields,
    phone_e164: Nullable(Type.String({
      pattern: '^\\+[0-9]{1,15}$', readOnly: true,
      description: 'read-only: the phone in E.164 (+442079460958), set by the service from phone and its region; what SMS and WhatsApp send to, inbound senders and upserts by phone match, and phone search looks in. ' +
        'Null without a phone, or for a number stored before validation that does not parse (list them with phone_e164: null and phone: {$ne: null})'
    })),
    company_id: Nullable(RecordId),
    owned_by_user_id: Nullable(RecordId),
    created_by_user_id: Nullable(RecordId),
    channel_whatsapp_wa_id: Text(200),
    channel_instagram_user_id: Text(200),
    channel_messenger_user_id: { ...Text(200), description: 'page-scoped id (PSID) of the person on Messenger' },
    channel_whatsapp_user_id: { ...Text(200), description: "WhatsApp's business-scoped user id (BSUID), for senders who hide their number behind a username" },
    system_type: Type.String({ description: "always 'contact'" }),
    avatar_url: Nullable(Type.String({ format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2000 })),
    custom_fields_by_name: Type.Record(Type.String(), Type.Any(), { description: 'custom field name to value' }),
    company: Type.Optional(Nullable(CompanySummary)),
    owner: Type.Optional(Nullable(UserSummary)),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'Contact', additionalProperties: false }
)
export type Contact = Static<typeof contactSchema>


const writable = {
  first_name: contactSchema.properties.first_name,
  last_name: Type.Optional(contactSchema.properties.last_name),
  email: Type.Optional(contactSchema.properties.email),
  phone: Type.Optional(contactSchema.properties.phone),
  phone_country_code: Type.Optional(contactSchema.properties.phone_country_code),
  phone_country_iso: Type.Optional(contactSchema.properties.phone_country_iso),
  company_id: Type.Optional(contactSchema.properties.company_id),
  owned_by_user_id: Type.Optional(contactSchema.properties.owned_by_user_id),
  channel_whatsapp_wa_id: Type.Optional(contactSchema.properties.channel_whatsapp_wa_id),
  channel_instagram_user_id: Type.Optional(contactSchema.properties.channel_instagram_user_id),
  channel_messenger_user_id: Type.Optional(contactSchema.properties.channel_messenger_user_id),
  channel_whatsapp_user_id: Type.Optional(contactSchema.properties.channel_whatsapp_user_id),
  avatar_url: Type.Optional(contactSchema.properties.avatar_url),
  external_id: Type.Optional(contactSchema.properties.external_id),
  custom_fields_by_name: Type.Optional(contactSchema.properties.custom_fields_by_name)
}

const upperCaseIso = async (value: string | null | undefined) => (typeof value === 'string' ? value.toUpperCase() : value)

export const contactDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'ContactData', additionalProperties: false }
)
export type ContactData = Static<typeof contactDataSchema>
export const contactDataValidator = getValidator(contactDataSchema, dataValidator)
export const contactDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  phone_country_iso: upperCaseIso,
  system_type: async () => 'contact'
})

export const contactPatchSchema = Type.Partial(Type.Object(writable), { $id: 'ContactPatch', additionalProperties: false })
export type ContactPatch = Static<typeof contactPatchSchema>
export const contactPatchValidator = getValidator(contactPatchSchema, dataValidator)
export const contactPatchResolver = resolve<any, HookContext>({
  phone_country_iso: upperCaseIso
})

export const contactQuerySchema = Type.Object(
  {
    ...listQuery(contactSchema, ['organization_id', 'first_name', 'last_name', 'email', 'phone', 'phone_e164', 'company_id', 'owned_by_user_id', 'created_by_user_id', 'external_id', 'created_at', 'updated_at'], {
      operators: { first_name: { $ilike: Type.String() }, last_name: { $ilike: Type.String() }, email: { $ilike: Type.String() } },
      sync: true,
      flags: { fastJoinForContactList: Type.Optional(Type.Boolean({ description: 'adds company {id, name} and owner {id, first_name, last_name}' })) }
    }).properties
  },
  { $id: 'ContactQuery', additionalProperties: false }
)
export type ContactQuery = Static<typeof contactQuerySchema>
export const contactQueryValidator = getValidator(contactQuerySchema, queryValidator)

export const contactSearchSchema = Type.Object(
  {
    ...searchFields,
    searchIn: Type.Unsafe<(typeof SEARCH_MODES)[number]>({ type: 'string', enum: [...SEARCH_MODES] }),
    phone_country_code: Type.Optional(contactSchema.properties.phone_country_code),
    phone_country_iso: Type.Optional(contactSchema.properties.phone_country_iso)
  },
  { $id: 'ContactSearch', additionalProperties: false }
)
export type ContactSearch = Static<typeof contactSearchSchema>
export const contactSearchValidator = getValidator(contactSearchSchema, dataValidator)

export const contactSearchResultSchema = searchResult('ContactSearchResult', contactSchema)

export const DUPLICATE_MODES = ['email', 'phone', 'name'] as const
/** The most contacts one merge folds into its primary. */
export const MAX_MERGED = 50

export const contactDuplicateSearchSchema = Type.Object(
  {
    searchIn: Type.Unsafe<(typeof DUPLICATE_MODES)[number]>({
      type: 'string', enum: [...DUPLICATE_MODES],
      description: "what duplicates share: the e-mail (any case), the phone (its E.164 form, however it is written) or the name (first and last, any case or accent)"
    }),
    organization_id: Type.Optional(RecordId),
    $limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'groups per page (default 10)' })),
    $skip: Type.Optional(Type.Integer({ minimum: 0 }))
  },
  { $id: 'ContactDuplicateSearch', additionalProperties: false }
)
export type ContactDuplicateSearch = Static<typeof contactDuplicateSearchSchema>
export const contactDuplicateSearchValidator = getValidator(contactDuplicateSearchSchema, dataValidator)

export const DuplicateGroup = Type.Object({
  value: Type.String({ description: 'the shared value, as compared (e.g. the lower-cased e-mail)' }),
  count: Type.Integer({ description: 'live contacts sharing it' }),
  contact_ids: Type.Array(RecordId, { description: 'their ids, oldest first (at most 20)' })
})
export const contactDuplicatesSchema = Type.Object(
  {
    total: Type.Integer({ description: 'groups in all' }),
    limit: Type.Integer(),
    skip: Type.Integer(),
    groups: Type.Array(DuplicateGroup),
    data: Type.Array(contactSchema, { description: 'the contacts of the groups of this page' })
  },
  { $id: 'ContactDuplicates' }
)

export const contactMergeSchema = Type.Object(
  {
    primary_id: RecordId,
    duplicate_ids: Type.Array(RecordId, { minItems: 1, maxItems: MAX_MERGED, uniqueItems: true }),
    keep_identity_from: Type.Optional({
      ...RecordId,
      description: 'primary_id or one of duplicate_ids: the contact whose channel identities (external_id, the channel_* ids, the phone) the merged contact keeps. ' +
        "Without it, a duplicate holding one the primary does not have is a 409. A duplicate named here hands over those it holds (the primary keeps its own where it holds none) and loses them; the other duplicates' are never taken."
    }),
    organization_id: Type.Optional(RecordId)
  },
  { $id: 'ContactMerge', additionalProperties: false }
)
export type ContactMerge = Static<typeof contactMergeSchema>
export const contactMergeValidator = getValidator(contactMergeSchema, dataValidator)
