import { BadRequest } from '@feathersjs/errors'
import { Type } from '@feathersjs/typebox'
import { Decimal } from 'decimal.js'
import { isLosslessNumber, parse } from 'lossless-json'
import type { HookContext } from '../declarations.js'

/**
 * Exact decimal arithmetic for money, quantities and percentages of deals, products and deal
 * products: never binary floats. Rounding is half-up (away from zero for the non-negative
 * amounts used here), as on an invoice.
 */
export const Exact = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP })
export type Exact = Decimal

/**
 * A JSON number is read through its shortest decimal form (19.99 → '19.99'), which is the
 * text the client wrote; database numerics arrive as strings already.
 */
export const exact = (value: number | string) => new Exact(typeof value === 'number' ? String(value) : value)

/** Rounded half-up to cents, as a decimal string with two places ('217.80'). */
export const toCents = (value: Exact) => value.toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2)

/** The exact sum of amounts, in cents ('1234.50'): a deal's amount from its lines' totals. */
export const totalOf = (amounts: (number | string)[]) => toCents(amounts.reduce<Exact>((sum, amount) => sum.plus(exact(amount)), new Exact(0)))

const ISO_4217 = new Set(Intl.supportedValuesOf('currency'))

export const CurrencyCode = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code in capitals, e.g. EUR' })

export interface AmountRules {
  /** Field → the most decimal places its number may have (2 for money, 4 for quantities). */
  places?: Record<string, number>
  /** Fields holding an ISO 4217 currency code. */
  currencies?: string[]
}

/**
 * The body as the client wrote it, numbers kept as their source text (lossless-json), before
 * JSON.parse rounded them to binary floats; parsed once per call. Undefined without a JSON body
 * (an internal call) or when it cannot be read losslessly (e.g. a repeated key).
 */
function writtenBody(context: HookContext): Record<string, unknown> | undefined {
  const params = context.params as { rawBody?: unknown; writtenBody?: Record<string, unknown> | null }
  if (typeof params.rawBody !== 'string') return undefined
  if (params.writtenBody === undefined) {
    try {
      params.writtenBody = parse(params.rawBody) as Record<string, unknown>
    } catch {
      params.writtenBody = null
    }
  }
  return params.writtenBody ?? undefined
}

/** The text the client wrote for a top-level number of the body, or the number's own text. */
const writtenNumber = (context: HookContext, field: string, value: number) => {
  const written = writtenBody(context)?.[field]
  return isLosslessNumber(written) ? written.value : String(value)
}

/**
 * Before hook after validateData: the decimal places of numeric fields (on the text the client
 * sent, so 19.999999999999999999 is refused rather than rounded to 20) and the currency codes,
 * which JSON Schema cannot check exactly (multipleOf on binary floats rejects 19.99). Decimal
 * strings are checked by their schema's pattern. 400 with errors.<field>.
 */
export const checkAmounts = ({ places = {}, currencies = [] }: AmountRules) => async (context: HookContext) => {
  const data = (context.data ?? {}) as Record<string, unknown>
  const errors: Record<string, string> = {}
  for (const [field, most] of Object.entries(places)) {
    const value = data[field]
    if (typeof value === 'number' && exact(writtenNumber(context, field, value)).decimalPlaces() > most) {
      errors[field] = `must have at most ${most} decimal places`
    }
  }
  for (const field of currencies) {
    const value = data[field]
    if (typeof value === 'string' && !ISO_4217.has(value)) errors[field] = 'must be an ISO 4217 currency code'
  }
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })
  return context
}
