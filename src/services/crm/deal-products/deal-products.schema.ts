import { Type } from '@feathersjs/typebox'
import type { Static } from '@feathersjs/typebox'
import { dataValidator, queryValidator, getValidator } from '../../../validators.js'
import { DecimalString, MoneyInput, Nullable, PercentageInput, QuantityInput, RecordId, listQuery, softDeleteTimestamps, ExternalId } from '../../../schemas.js'

export const DISCOUNT_TYPES = ['percentage', 'fixed'] as const
export type DiscountType = (typeof DISCOUNT_TYPES)[number]

export const dealProductSchema = Type.Object(
  {
    id: RecordId,
    organization_id: RecordId,
    deal_id: RecordId,
    product_id: RecordId,
    quantity: Type.String({ pattern: '^\\d+\\.\\d{4}$', description: "exact decimal with four places, e.g. '2.5000'" }),
    price: DecimalString,
    description: Nullable(Type.String({ maxLength: 10_000 })),
    discount_type: Nullable(Type.Union(DISCOUNT_TYPES.map((type) => Type.Literal(type)))),
    discount_amount: Nullable(DecimalString),
    discount_percentage: Nullable(DecimalString),
    tax_percentage: DecimalString,
    total_amount_without_tax: DecimalString,
    total_amount_with_tax: DecimalString,
    name: Nullable(Type.String({ description: "the product's name when the line was created" })),
    sku: Nullable(Type.String({ description: "the product's SKU when the line was created" })),
    external_id: ExternalId,
    ...softDeleteTimestamps
  },
  { $id: 'DealProduct', additionalProperties: false }
)
export type DealProduct = Static<typeof dealProductSchema>

/** The columns of a deal product embedded in GET /deals/:id, in the spec's order. */
export const EMBEDDED_DEAL_PRODUCT_COLUMNS = [
  'id', 'quantity', 'price', 'description', 'discount_type', 'discount_amount', 'discount_percentage', 'tax_percentage',
  'total_amount_with_tax', 'total_amount_without_tax', 'product_id', 'name', 'sku'
] as const
export const embeddedDealProductSchema = Type.Pick(dealProductSchema, [...EMBEDDED_DEAL_PRODUCT_COLUMNS], { $id: undefined, additionalProperties: false })


const changeable = {
  quantity: QuantityInput(),
  price: Type.Optional(MoneyInput("a number or a decimal string, at most 2 decimal places; defaults to the product's price")),
  description: Type.Optional(dealProductSchema.properties.description),
  external_id: Type.Optional(dealProductSchema.properties.external_id),
  discount_type: Type.Optional(dealProductSchema.properties.discount_type),
  discount_amount: Type.Optional(Nullable(MoneyInput("with discount_type 'fixed', at most the line subtotal; a number or a decimal string, at most 2 decimal places"))),
  discount_percentage: Type.Optional(Nullable(PercentageInput("with discount_type 'percentage': 0 to 100, a number or a decimal string, at most 2 decimal places"))),
  tax_percentage: Type.Optional(PercentageInput("defaults to the product's tax_percentage, or 0; a number or a decimal string, at most 2 decimal places"))
}

/** Decimal places of the numeric inputs (see checkAmounts). */
export const dealProductAmountRules = {
  places: { quantity: 4, price: 2, discount_amount: 2, discount_percentage: 2, tax_percentage: 2 }
}

export const dealProductDataSchema = Type.Object(
  { organization_id: Type.Optional(RecordId), deal_id: RecordId, product_id: RecordId, ...changeable },
  { $id: 'DealProductData', additionalProperties: false }
)
export type DealProductData = Static<typeof dealProductDataSchema>
export const dealProductDataValidator = getValidator(dealProductDataSchema, dataValidator)

export const dealProductPatchSchema = Type.Partial(Type.Object(changeable), { $id: 'DealProductPatch', additionalProperties: false })
export type DealProductPatch = Static<typeof dealProductPatchSchema>
export const dealProductPatchValidator = getValidator(dealProductPatchSchema, dataValidator)

export const dealProductQuerySchema = Type.Object(
  { ...listQuery(dealProductSchema, ['organization_id', 'deal_id', 'product_id', 'discount_type', 'external_id', 'created_at', 'updated_at'], { sync: true }).properties },
  { $id: 'DealProductQuery', additionalProperties: false }
)
export type DealProductQuery = Static<typeof dealProductQuerySchema>
export const dealProductQueryValidator = getValidator(dealProductQuerySchema, queryValidator)
