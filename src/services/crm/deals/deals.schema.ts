import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { CalendarDate, DecimalString, MoneyInput, Nullable, RecordId, Timestamp, listQuery, softDeleteTimestamps, ExternalId } from '../../../schemas.js'
import { embeddedDealProductSchema } from '../deal-products/deal-products.schema.js'
import { CurrencyCode } from '../../../lib/money.js'

export const DEAL_STATUSES = ['open', 'won', 'lost'] as const
export type DealStatus = (typeof DEAL_STATUSES)[number]

// The joined shapes, exactly the fields of the spec's Deal table.
const PipelineSummary = Type.Object({ id: RecordId, name: Type.String() })
const StageSummary = Type.Object({ id: RecordId, name: Type.String(), pipeline_id: RecordId })
const CompanySummary = Type.Object({
  id: RecordId, name: Type.String(), organization_id: RecordId,
  created_by_user_id: Nullable(RecordId), owned_by_user_id: Nullable(RecordId)
})
const ContactSummary = Type.Object({
  id: RecordId, first_name: Type.String(), last_name: Nullable(Type.String()), email: Nullable(Type.String()),
  phone: Nullable(Type.String()), phone_country_code: Nullable(Type.String()), company_id: Nullable(RecordId),
  avatar_url: Nullable(Type.String())
})
const OwnerSummary = Type.Object({
  id: RecordId, first_name: Nullable(Type.String()), last_name: Nullable(Type.String()), email: Type.String()
})

export const dealSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 300 }),
    amount: { ...DecimalString, description: "two decimal places, e.g. '1500.00'" },
    currency: CurrencyCode,
    status: Type.Union(DEAL_STATUSES.map((status) => Type.Literal(status))),
    pipeline_id: RecordId,
    pipeline_stage_id: RecordId,
    contact_id: Nullable(RecordId),
    company_id: Nullable(RecordId),
    created_by_user_id: Nullable(RecordId),
    owned_by_user_id: Nullable(RecordId),
    expected_close_date: Nullable(CalendarDate),
    won_date: Nullable({ ...Timestamp, description: 'when the deal was won; null unless status is won' }),
    lost_date: Nullable({ ...Timestamp, description: 'when the deal was lost; null unless status is lost' }),
    custom_fields_by_name: Type.Record(Type.String(), Type.Any(), { description: 'custom field name to value' }),
    pipeline: Type.Optional(Nullable(PipelineSummary)),
    pipelineStage: Type.Optional(Nullable(StageSummary)),
    company: Type.Optional(Nullable(CompanySummary)),
    contact: Type.Optional(Nullable(ContactSummary)),
    owner: Type.Optional(Nullable(OwnerSummary)),
    dealProducts: Type.Optional(Type.Array(embeddedDealProductSchema, { description: 'on GET /deals/:id' })),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'Deal', additionalProperties: false }
)
export type Deal = Static<typeof dealSchema>


const writable = {
  name: dealSchema.properties.name,
  amount: MoneyInput(),
  currency: CurrencyCode,
  status: dealSchema.properties.status,
  pipeline_id: RecordId,
  pipeline_stage_id: { ...RecordId, description: 'a stage of the pipeline' },
  contact_id: Type.Optional(dealSchema.properties.contact_id),
  company_id: Type.Optional(dealSchema.properties.company_id),
  owned_by_user_id: Type.Optional(dealSchema.properties.owned_by_user_id),
  expected_close_date: Type.Optional(
    Nullable(
      Type.Union([CalendarDate, Type.String({ format: 'date-time' })], {
        description: 'YYYY-MM-DD, or an ISO 8601 date-time whose date part (as written) is kept; returned as YYYY-MM-DD'
      })
    )
  ),
  external_id: Type.Optional(dealSchema.properties.external_id),
  custom_fields_by_name: Type.Optional(dealSchema.properties.custom_fields_by_name)
}

/** Decimal places of the amount and its currency code (see checkAmounts). */
export const dealAmountRules = { places: { amount: 2 }, currencies: ['currency'] }

/** The date part as written: '2026-12-31T23:00:00-05:00' → '2026-12-31'. */
const calendarDate = async (value: string | null | undefined) => (typeof value === 'string' ? value.slice(0, 10) : value)

export const dealDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'DealData', additionalProperties: false }
)
export type DealData = Static<typeof dealDataSchema>
export const dealDataValidator = getValidator(dealDataSchema, dataValidator)
export const dealDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  owned_by_user_id: async (value, _data, context) => (value === undefined ? context.params.caller?.userId ?? null : value),
  expected_close_date: calendarDate
})

export const dealPatchSchema = Type.Partial(Type.Object(writable), { $id: 'DealPatch', additionalProperties: false })
export type DealPatch = Static<typeof dealPatchSchema>
export const dealPatchValidator = getValidator(dealPatchSchema, dataValidator)

export const dealPatchResolver = resolve<any, HookContext>({
  expected_close_date: calendarDate
})

const dealFilters = Type.Object({
  ...dealSchema.properties,
  amount: Type.Number({ minimum: 0 }),
  name: Type.String()
})

export const dealQuerySchema = Type.Object(
  {
    ...listQuery(
      dealFilters,
      [
        'organization_id', 'status', 'pipeline_id', 'pipeline_stage_id', 'contact_id', 'company_id', 'owned_by_user_id',
        'created_by_user_id', 'amount', 'currency', 'expected_close_date', 'won_date', 'lost_date', 'name', 'external_id', 'created_at', 'updated_at'
      ],
      {
        operators: { name: { $ilike: Type.String() } },
        sync: true,
        flags: {
          fastJoinForDealsList: Type.Optional(
            Type.Boolean({ description: 'on lists, adds company, contact, pipelineStage and owner to each row (GET /deals/:id always has them)' })
          )
        }
      }
    ).properties
  },
  { $id: 'DealQuery', additionalProperties: false }
)
export type DealQuery = Static<typeof dealQuerySchema>
export const dealQueryValidator = getValidator(dealQuerySchema, queryValidator)
