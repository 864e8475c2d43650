import { resolve } from '@feathersjs/schema'
import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import type { HookContext } from '../../../declarations.js'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { Nullable, RecordId, UserSummary, listQuery, softDeleteTimestamps, searchResult, termSearch, ExternalId } from '../../../schemas.js'

const Text = (maxLength: number) => Nullable(Type.String({ maxLength }))

export const companySchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 300 }),
    description: Text(10_000),
    website: Nullable(Type.String({ format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2000 })),
    industry: Text(200),
    size: Text(100),
    created_by_user_id: Nullable(RecordId),
    owned_by_user_id: Nullable(RecordId),
    custom_fields_by_name: Type.Record(Type.String(), Type.Any(), { description: 'custom field name to value' }),
    creator: Type.Optional(Nullable(UserSummary)),
    owner: Type.Optional(Nullable(UserSummary)),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'Company', additionalProperties: false }
)
export type Company = Static<typeof companySchema>


const writable = {
  name: companySchema.properties.name,
  description: Type.Optional(companySchema.properties.description),
  website: Type.Optional(companySchema.properties.website),
  industry: Type.Optional(companySchema.properties.industry),
  size: Type.Optional(companySchema.properties.size),
  owned_by_user_id: Type.Optional(companySchema.properties.owned_by_user_id),
  external_id: Type.Optional(companySchema.properties.external_id),
  custom_fields_by_name: Type.Optional(companySchema.properties.custom_fields_by_name)
}

export const companyDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'CompanyData', additionalProperties: false }
)
export type CompanyData = Static<typeof companyDataSchema>
export const companyDataValidator = getValidator(companyDataSchema, dataValidator)
export const companyDataResolver = resolve<any, HookContext>({
  created_by_user_id: async (_value, _data, context) => context.params.caller?.userId ?? null,
  owned_by_user_id: async (value, _data, context) => (value === undefined ? context.params.caller?.userId ?? null : value)
})

export const companyPatchSchema = Type.Partial(Type.Object(writable), { $id: 'CompanyPatch', additionalProperties: false })
export type CompanyPatch = Static<typeof companyPatchSchema>
export const companyPatchValidator = getValidator(companyPatchSchema, dataValidator)
export const companyPatchResolver = resolve<any, HookContext>({})

export const companyQuerySchema = Type.Object(
  {
    ...listQuery(companySchema, ['organization_id', 'name', 'industry', 'size', 'owned_by_user_id', 'created_by_user_id', 'external_id', 'created_at', 'updated_at'], {
      operators: { name: { $ilike: Type.String() } },
      sync: true,
      flags: { fastJoinForCompanyList: Type.Optional(Type.Boolean({ description: 'adds creator and owner to each row' })) }
    }).properties
  },
  { $id: 'CompanyQuery', additionalProperties: false }
)
export type CompanyQuery = Static<typeof companyQuerySchema>
export const companyQueryValidator = getValidator(companyQuerySchema, queryValidator)

export const companySearchSchema = termSearch('CompanySearch')
export type CompanySearch = Static<typeof companySearchSchema>
export const companySearchValidator = getValidator(companySearchSchema, dataValidator)

export const companySearchResultSchema = searchResult('CompanySearchResult', companySchema)
