import { describe, expect, it } from 'vitest'
import { ISO_TIMESTAMP, renderedColumn } from '../../src/engine/catalog.js'
import { publicView } from '../../src/services/reservations/public-booking/public-booking.class.js'

// Timestamps on the wire: ISO 8601 in UTC with milliseconds, whether Postgres renders them (the
// read model) or Node does (answers built from rows).
const reservation = (overrides: Record<string, unknown>) => ({
  id: 7,
  service_id: 3,
  start_datetime: new Date('2026-06-10T09:00:00Z'),
  end_datetime: new Date('2026-06-10T09:30:00Z'),
  party_size: 1,
  status: 'confirmed',
  cancelled_at: null,
  ...overrides
})

describe('timestamp text rendered by Postgres', () => {
  it('when a timestamptz column is rendered, then it is to_char in UTC with 24-hour time, milliseconds and a Z', () => {
    expect(ISO_TIMESTAMP).toBe(`'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`)
    expect(renderedColumn({ name: 'created_at', type: 'timestamptz' }, 'p."created_at"')).toBe(
      `to_char(p."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    )
  })

  it('when a numeric column is rendered, then it is its exact text; any other column is left to Postgres', () => {
    expect(renderedColumn({ name: 'amount', type: 'numeric' }, 'p."amount"')).toBe('p."amount"::text')
    for (const type of ['date', 'time', 'int4', 'text', 'jsonb']) expect(renderedColumn({ name: 'x', type }, 'p."x"')).toBe('p."x"')
  })
})

describe('timestamp text rendered by Node', () => {
  it('when a time falls on a whole second, then its text still has three millisecond digits', () => {
    const view = publicView(reservation({}))
    expect([view.start_datetime, view.end_datetime]).toEqual(['2026-06-10T09:00:00.000Z', '2026-06-10T09:30:00.000Z'])
  })

  it('when a time has milliseconds, then they are kept exactly', () => {
    const view = publicView(reservation({ start_datetime: new Date(Date.UTC(2026, 5, 10, 9, 0, 0, 7)), end_datetime: new Date(Date.UTC(2026, 5, 10, 9, 30, 0, 999)) }))
    expect([view.start_datetime, view.end_datetime]).toEqual(['2026-06-10T09:00:00.007Z', '2026-06-10T09:30:00.999Z'])
  })

  it('when a time arrives with an offset or in Postgres text form, then it is written in UTC', () => {
    const view = publicView(reservation({ start_datetime: '2026-03-29T03:30:00.250+02:00', end_datetime: '2026-03-29 01:59:59.5+00', cancelled_at: '2026-03-28T23:00:00-05:00' }))
    expect([view.start_datetime, view.end_datetime, view.cancelled_at]).toEqual(['2026-03-29T01:30:00.250Z', '2026-03-29T01:59:59.500Z', '2026-03-29T04:00:00.000Z'])
  })

  it('when a reservation is not cancelled, then cancelled_at is null, not a time', () => {
    expect(publicView(reservation({})).cancelled_at).toBeNull()
  })
})
