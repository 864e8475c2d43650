import { BadRequest } from '@feathersjs/errors'
import { describe, expect, it } from 'vitest'
import { lineTotals, settleLine } from '../../src/services/crm/deal-products/deal-products.class.js'
import type { Line } from '../../src/services/crm/deal-products/deal-products.class.js'
import { checkAmounts, exact, toCents, totalOf } from '../../src/lib/money.js'
import { MONEY_PATTERN, PERCENTAGE_PATTERN, QUANTITY_PATTERN } from '../../src/schemas.js'

// Money in exact decimals, rounded half-up to cents, as on an invoice: never binary floats.
const line = (overrides: Partial<Line>): Line => ({
  quantity: 1, price: 0, discount_type: null, discount_amount: null, discount_percentage: null, tax_percentage: 0, ...overrides
})
const totals = (overrides: Partial<Line>) => {
  const { total_amount_without_tax, total_amount_with_tax } = lineTotals(line(overrides))
  return [total_amount_without_tax, total_amount_with_tax]
}

/** The field errors of the BadRequest a call throws, or undefined when it does not throw. */
async function fieldErrors(call: () => unknown) {
  try {
    await call()
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequest)
    return (error as BadRequest).errors
  }
  return undefined
}

describe('money: exact decimals', () => {
  it('when a JSON number is read, then it is the decimal the client wrote, not its binary float', () => {
    expect(exact(19.99).toFixed()).toBe('19.99')
    expect(exact(0.1).plus(exact(0.2)).toFixed()).toBe('0.3')
    expect(exact('0.1').times(3).toFixed()).toBe('0.3')
  })

  it('when an amount is rounded to cents, then half a cent goes up and the text has two places', () => {
    expect(['2.345', '2.344999', '0.005', '0.004', '0.125', '5', '217.8', '1234567890123.455'].map((value) => toCents(exact(value)))).toEqual([
      '2.35', '2.34', '0.01', '0.00', '0.13', '5.00', '217.80', '1234567890123.46'
    ])
  })

  it("when a deal's lines are added up, then the sum is exact and in cents", () => {
    expect(totalOf(['53.97', '150.00', '0.01'])).toBe('203.98')
    expect(totalOf(Array.from({ length: 10 }, () => 0.1))).toBe('1.00')
    expect(totalOf(['999999999999.99', '0.01'])).toBe('1000000000000.00')
    expect(totalOf([])).toBe('0.00')
  })
})

describe('money: line totals', () => {
  it('when 3 × 19.99 has a 10% discount and 21% tax, then 53.97 without tax and 65.30 with it', () => {
    expect(totals({ quantity: 3, price: 19.99, discount_type: 'percentage', discount_percentage: 10, tax_percentage: 21 })).toEqual(['53.97', '65.30'])
  })

  it('when 0.5 × 2.01 makes exactly 1.005, then the total is 1.01 (a binary float makes it 1.00)', () => {
    expect(totals({ quantity: 0.5, price: 2.01 })).toEqual(['1.01', '1.01'])
  })

  it('when the net amount is exactly half a cent above a cent (0.125), then it rounds up, not to even', () => {
    expect(totals({ quantity: 0.5, price: 0.25 })).toEqual(['0.13', '0.13'])
  })

  it('when the tax is computed, then it is on the rounded net amount the line shows', () => {
    // 0.5 × 0.33 = 0.165 → 0.17; 0.17 × 1.10 = 0.187 → 0.19 (on 0.165 it would be 0.18).
    expect(totals({ quantity: 0.5, price: 0.33, tax_percentage: 10 })).toEqual(['0.17', '0.19'])
  })

  it('when quantity and percentages have many decimals, then every step is exact until the cents', () => {
    // 2.3333 × 19.99 = 46.642667; 46.64 × 1.075 = 50.138.
    expect(totals({ quantity: '2.3333', price: '19.99', tax_percentage: '7.5' })).toEqual(['46.64', '50.14'])
    // 10 × 33.33% = 3.333 off: 6.667.
    expect(totals({ price: 10, discount_type: 'percentage', discount_percentage: '33.33' })).toEqual(['6.67', '6.67'])
  })

  it('when a fixed discount is taken off, then it comes off the subtotal before tax', () => {
    expect(totals({ quantity: 2, price: 100, discount_type: 'fixed', discount_amount: 50, tax_percentage: 21 })).toEqual(['150.00', '181.50'])
  })

  it('when the discount is 100% or the whole subtotal, then the totals are 0.00', () => {
    expect(totals({ price: 80, discount_type: 'percentage', discount_percentage: 100, tax_percentage: 21 })).toEqual(['0.00', '0.00'])
    expect(totals({ price: 80, discount_type: 'fixed', discount_amount: 80, tax_percentage: 21 })).toEqual(['0.00', '0.00'])
  })

  it('when amounts are near the largest a total holds, then they stay exact', () => {
    expect(totals({ quantity: 9_999_999_999, price: 99.99 })).toEqual(['999899999900.01', '999899999900.01'])
  })
})

describe('money: a line as stored', () => {
  it('when a line is settled, then its numbers are exact decimal texts and its totals are computed', () => {
    const settled = settleLine({ price: 19.99, tax_percentage: 21 }, { quantity: 3, discount_type: 'percentage', discount_percentage: 10 })
    expect(settled).toEqual({
      quantity: '3', price: '19.99', discount_type: 'percentage', discount_percentage: '10', discount_amount: null,
      tax_percentage: '21', total_amount_without_tax: '53.97', total_amount_with_tax: '65.30'
    })
  })

  it('when a fixed discount is above the subtotal, then 400 naming discount_amount; equal to it, the line is free', async () => {
    const current = { price: 100, tax_percentage: 0 }
    expect(await fieldErrors(() => settleLine(current, { quantity: 2, discount_type: 'fixed', discount_amount: 200.01 }))).toEqual({
      discount_amount: 'must not be above the line subtotal (200)'
    })
    expect(settleLine(current, { quantity: 2, discount_type: 'fixed', discount_amount: 200 }).total_amount_without_tax).toBe('0.00')
  })

  it("when a discount field does not match discount_type, or the type's field is missing, then 400 naming it", async () => {
    const current = { quantity: 1, price: 100, tax_percentage: 0 }
    expect(await fieldErrors(() => settleLine(current, { discount_type: 'fixed', discount_amount: 5, discount_percentage: 10 }))).toEqual({
      discount_percentage: "is only used with discount_type 'percentage'"
    })
    expect(await fieldErrors(() => settleLine(current, { discount_amount: 5 }))).toEqual({ discount_amount: "is only used with discount_type 'fixed'" })
    expect(await fieldErrors(() => settleLine(current, { discount_type: 'percentage' }))).toEqual({
      discount_percentage: "is required with discount_type 'percentage'"
    })
  })

  it('when a patch switches a percentage discount to a fixed one, or removes it, then the unused discount field becomes null', () => {
    const stored = { quantity: 1, price: 100, discount_type: 'percentage' as const, discount_percentage: '10', discount_amount: null, tax_percentage: 0 }
    expect(settleLine(stored, { discount_type: 'fixed', discount_amount: 5 })).toMatchObject({
      discount_type: 'fixed', discount_percentage: null, discount_amount: '5', total_amount_without_tax: '95.00'
    })
    expect(settleLine(stored, { discount_type: null })).toMatchObject({
      discount_type: null, discount_percentage: null, discount_amount: null, total_amount_without_tax: '100.00'
    })
  })

  it('when the subtotal or the total with tax would not fit numeric(14,2), then 400 naming quantity', async () => {
    const tooLarge = { quantity: 'makes the line total larger than 999999999999.99' }
    expect(await fieldErrors(() => settleLine({ price: 999_999_999_999.99, tax_percentage: 0 }, { quantity: 2 }))).toEqual(tooLarge)
    expect(await fieldErrors(() => settleLine({ price: 999_999_999_999.99, tax_percentage: 1 }, { quantity: 1 }))).toEqual(tooLarge)
    expect(await fieldErrors(() => settleLine({ price: 999_999_999_999.99, tax_percentage: 0 }, { quantity: 1 }))).toBeUndefined()
  })
})

describe('money: amounts as the client wrote them', () => {
  const check = checkAmounts({ places: { amount: 2 }, currencies: ['currency'] })
  const call = (data: Record<string, unknown>, rawBody?: string) => check({ data, params: rawBody === undefined ? {} : { rawBody } } as any)

  it('when the body says 19.999999999999999999, which JSON.parse makes 20, then 400: the written text has 18 places', async () => {
    const rawBody = '{"amount":19.999999999999999999}'
    expect(await fieldErrors(() => call(JSON.parse(rawBody), rawBody))).toEqual({ amount: 'must have at most 2 decimal places' })
  })

  it('when amounts have at most two places, then they pass, as written or as numbers of an internal call', async () => {
    expect(await fieldErrors(() => call({ amount: 19.99 }, '{"amount":19.99}'))).toBeUndefined()
    expect(await fieldErrors(() => call({ amount: 1500 }))).toBeUndefined()
    expect(await fieldErrors(() => call({ amount: 0.1 + 0.2 }))).toEqual({ amount: 'must have at most 2 decimal places' })
  })

  it('when a currency is not an ISO 4217 code, then 400 naming it', async () => {
    expect(await fieldErrors(() => call({ currency: 'EUR' }))).toBeUndefined()
    expect(await fieldErrors(() => call({ currency: 'ABC' }))).toEqual({ currency: 'must be an ISO 4217 currency code' })
  })

  it.each([
    ['money', MONEY_PATTERN, ['0', '1500', '1500.5', '1500.50', '999999999999.99'], ['1500.505', '-1', '1e3', '1,5', '.5', '1000000000000']],
    ['a quantity', QUANTITY_PATTERN, ['0.0001', '2.5', '9999999999'], ['0', '0.0', '0.0000', '00', '2.12345', '-1']],
    ['a percentage', PERCENTAGE_PATTERN, ['0', '7.5', '21', '100', '100.00'], ['100.01', '101', '7.555', '-5']]
  ])('when %s is sent as a decimal string, then its pattern takes the valid texts and refuses the others', (_what, pattern, valid, invalid) => {
    const matches = (text: string) => new RegExp(pattern).test(text)
    expect(valid.filter((text) => !matches(text))).toEqual([])
    expect(invalid.filter(matches)).toEqual([])
  })
})
