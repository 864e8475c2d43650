import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { DecimalString, MoneyInput, Nullable, PercentageInput, RecordId, listQuery, softDeleteTimestamps, searchResult, termSearch, ExternalId } from '../../../schemas.js'
import { CurrencyCode } from '../../../lib/money.js'

export const productSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    name: Type.String({ minLength: 1, maxLength: 300 }),
    sku: Nullable(Type.String({ minLength: 1, maxLength: 100, description: "unique among the organization's live products" })),
    description: Nullable(Type.String({ maxLength: 10_000 })),
    price: Nullable(DecimalString),
    currency: Nullable(CurrencyCode),
    tax_percentage: Nullable(DecimalString),
    active: Type.Boolean(),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'Product', additionalProperties: false }
)
export type Product = Static<typeof productSchema>


const writable = {
  name: productSchema.properties.name,
  sku: Type.Optional(productSchema.properties.sku),
  description: Type.Optional(productSchema.properties.description),
  price: Type.Optional(Nullable(MoneyInput())),
  currency: Type.Optional(productSchema.properties.currency),
  tax_percentage: Type.Optional(Nullable(PercentageInput())),
  active: Type.Optional(Type.Boolean({ default: true })),
  external_id: Type.Optional(productSchema.properties.external_id)
}

/** Decimal places of the numeric inputs and the currency code (see checkAmounts). */
export const productAmountRules = { places: { price: 2, tax_percentage: 2 }, currencies: ['currency'] }

export const productDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), ...writable },
  { $id: 'ProductData', additionalProperties: false }
)
export type ProductData = Static<typeof productDataSchema>
export const productDataValidator = getValidator(productDataSchema, dataValidator)

export const productPatchSchema = Type.Partial(Type.Object(writable), { $id: 'ProductPatch', additionalProperties: false })
export type ProductPatch = Static<typeof productPatchSchema>
export const productPatchValidator = getValidator(productPatchSchema, dataValidator)

export const productQuerySchema = Type.Object(
  {
    ...listQuery(productSchema, ['organization_id', 'name', 'sku', 'active', 'currency', 'external_id', 'created_at', 'updated_at'], {
      operators: { name: { $ilike: Type.String() } },
      sync: true
    }).properties
  },
  { $id: 'ProductQuery', additionalProperties: false }
)
export type ProductQuery = Static<typeof productQuerySchema>
export const productQueryValidator = getValidator(productQuerySchema, queryValidator)

export const productSearchSchema = termSearch('ProductSearch')
export type ProductSearch = Static<typeof productSearchSchema>
export const productSearchValidator = getValidator(productSearchSchema, dataValidator)

export const productSearchResultSchema = searchResult('ProductSearchResult', productSchema)
