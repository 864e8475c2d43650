import { BadRequest, MethodNotAllowed, NotFound } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import type { Knex } from 'knex'
import { RecordService } from '../../../engine/record-service.js'
import type { UpsertRecord } from '../../../engine/record-service.js'
import { Exact, exact, toCents } from '../../../lib/money.js'
import type { DealProduct, DealProductData, DealProductPatch, DealProductQuery, DiscountType } from './deal-products.schema.js'
import { databaseOf } from '../../../db.js'

export type { DealProduct, DealProductData, DealProductPatch, DealProductQuery }
export type DealProductParams = KnexAdapterParams<DealProductQuery>

type Amount = number | string

/** The priced part of a deal product: what its totals are computed from. */
export interface Line {
  quantity: Amount
  price: Amount
  discount_type: DiscountType | null
  discount_amount: Amount | null
  discount_percentage: Amount | null
  tax_percentage: Amount
}

/**
 * The totals of a line in exact decimals, rounded half-up to cents:
 *   subtotal = quantity × price
 *   discount = subtotal × discount_percentage / 100 ('percentage') or discount_amount ('fixed')
 *   total_amount_without_tax = subtotal − discount, rounded to cents
 *   total_amount_with_tax = total_amount_without_tax × (1 + tax_percentage / 100), rounded to cents
 * The tax is computed on the rounded net amount, the figure the line shows.
 */
export function lineTotals(line: Line) {
  const subtotal = exact(line.quantity).times(exact(line.price))
  const discount =
    line.discount_type === 'percentage' ? subtotal.times(exact(line.discount_percentage!)).dividedBy(100)
    : line.discount_type === 'fixed' ? exact(line.discount_amount!)
    : new Exact(0)
  const withoutTax = new Exact(toCents(subtotal.minus(discount)))
  const withTax = withoutTax.times(exact(line.tax_percentage).dividedBy(100).plus(1))
  return { subtotal, total_amount_without_tax: toCents(withoutTax), total_amount_with_tax: toCents(withTax) }
}

/** The largest amount a numeric(14,2) total holds. */
const MAX_AMOUNT = '999999999999.99'

const definedOnly = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([, value]) => value !== undefined))
const asText = (value: Amount | null) => (value === null ? null : exact(value).toFixed())

/**
 * The line a write leaves behind: the stored line (if any) with the sent fields over it. The
 * discount column in use follows discount_type and the other one becomes null; a 'fixed'
 * discount may not exceed the subtotal. 400 with errors.<field> otherwise.
 */
export function settleLine(current: Partial<Line>, sent: Partial<Line>) {
  const merged = { ...current, ...definedOnly(sent) } as Line
  const type = merged.discount_type ?? null
  const errors: Record<string, string> = {}
  if (type !== 'percentage' && sent.discount_percentage != null) errors.discount_percentage = "is only used with discount_type 'percentage'"
  if (type !== 'fixed' && sent.discount_amount != null) errors.discount_amount = "is only used with discount_type 'fixed'"
  if (type === 'percentage' && merged.discount_percentage == null) errors.discount_percentage = "is required with discount_type 'percentage'"
  if (type === 'fixed' && merged.discount_amount == null) errors.discount_amount = "is required with discount_type 'fixed'"
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })

  const line: Line = {
    quantity: merged.quantity,
    price: merged.price,
    discount_type: type,
    discount_percentage: type === 'percentage' ? merged.discount_percentage : null,
    discount_amount: type === 'fixed' ? merged.discount_amount : null,
    tax_percentage: merged.tax_percentage ?? 0
  }
  const { subtotal, ...totals } = lineTotals(line)
  if (exact(totals.total_amount_with_tax).greaterThan(MAX_AMOUNT) || subtotal.greaterThan(MAX_AMOUNT)) {
    throw new BadRequest('Validation failed', { errors: { quantity: `makes the line total larger than ${MAX_AMOUNT}` } })
  }
  if (type === 'fixed' && exact(line.discount_amount!).greaterThan(subtotal)) {
    throw new BadRequest('Validation failed', {
      errors: { discount_amount: `must not be above the line subtotal (${subtotal.toFixed()})` }
    })
  }
  return {
    quantity: asText(line.quantity),
    price: asText(line.price),
    discount_type: type,
    discount_percentage: asText(line.discount_percentage),
    discount_amount: asText(line.discount_amount),
    tax_percentage: asText(line.tax_percentage),
    ...totals
  }
}

/** A new line as stored: the product's name and SKU, its price and tax unless sent, the totals. */
function pricedLine(data: DealProductData, product: Record<string, any> | undefined) {
  if (!product) throw new BadRequest('Invalid reference', { errors: { product_id: 'must be a product of this organization' } })
  const price = data.price ?? product.price
  if (price === null || price === undefined) {
    throw new BadRequest('Validation failed', { errors: { price: 'is required: the product has no price' } })
  }
  const line = settleLine({ price, tax_percentage: product.tax_percentage ?? 0 }, data as Partial<Line>)
  return {
    organization_id: data.organization_id,
    deal_id: data.deal_id,
    product_id: data.product_id,
    description: data.description ?? null,
    external_id: data.external_id ?? null,
    name: product.name,
    sku: product.sku,
    ...line
  }
}

export class DealProductService extends RecordService<DealProduct, DealProductData, DealProductParams, DealProductPatch> {
  /** Prices each line (see pricedLines) and writes them in one INSERT. */
  async _create(data: DealProductData | DealProductData[], params: DealProductParams = {}): Promise<any> {
    const lines = await this.pricedLines(Array.isArray(data) ? data : [data], params)
    return super._create(Array.isArray(data) ? lines : lines[0], params)
  }

  /** A batch upsert writes priced lines too: every column of a line is the record's. */
  async upsertRows(keyName: string, records: UpsertRecord[], params: DealProductParams = {}) {
    const lines = await this.pricedLines(records.map(({ row }) => row as DealProductData), params)
    return super.upsertRows(keyName, lines.map((row) => ({ row, sent: Object.keys(row) })), params)
  }

  /**
   * Copies each line's product name and SKU (and its price and tax unless sent), then prices the
   * line; the products of all lines in one query. A line's 400 names its fields, or in a batch
   * its index (errors["2"].price).
   */
  async pricedLines(lines: DealProductData[], params: DealProductParams) {
    const db = databaseOf(params, this.knex)
    const products: Record<string, any>[] = await db('products')
      .select('id', 'name', 'sku', 'price', 'tax_percentage')
      .where({ organization_id: lines[0].organization_id! })
      .whereIn('id', [...new Set(lines.map((line) => line.product_id))])
      .whereNull('deleted_at')
    const byId = new Map(products.map((product) => [Number(product.id), product]))
    const errors: Record<string, unknown> = {}
    const priced = lines.map((data, index) => {
      try {
        return pricedLine(data, byId.get(Number(data.product_id)))
      } catch (error) {
        if (lines.length === 1 || !(error instanceof BadRequest)) throw error
        errors[index] = (error as any).errors
        return undefined
      }
    })
    if (Object.keys(errors).length) throw new BadRequest('Invalid records', { errors })
    return priced as Record<string, any>[]
  }

  /** Re-prices the stored line with the changes, the row locked so that concurrent patches queue. */
  async _patch(id: NullableId, data: DealProductPatch, params: DealProductParams = {}): Promise<any> {
    if (id === null) throw new MethodNotAllowed('Can not patch multiple entries')
    const reprice = async (trx: Knex.Transaction) => {
      const scoped = { ...params, transaction: { trx } } as DealProductParams
      const current = await this.createQuery(scoped).andWhere('deal_products.id', id).forUpdate().first()
      if (!current) throw new NotFound(`No record found for id '${id}'`)
      const line = settleLine(current, data as Partial<Line>)
      const changes = { ...definedOnly({ description: data.description, external_id: data.external_id }), ...line }
      return super._patch(id, changes as unknown as DealProductPatch, scoped)
    }
    // Inside a caller's transaction (a batch update) the line is re-priced there.
    return params.transaction?.trx ? reprice(params.transaction.trx) : this.knex.transaction(reprice)
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'deal_products'
})
