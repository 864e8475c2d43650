import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { timestampText } from '../../src/services/record-service.js'
import { isEmbedded } from '../../src/db.js'

/**
 * A client's reads take their timestamps from Postgres as ISO text (WIRE_TYPES) instead of
 * Dates: what goes on the wire must be the very text JSON wrote for the Date, on every read path
 * (the named read by id and first page, the builder's filtered list and read), and internal
 * calls must still get Dates.
 */
describe('timestamps read for the wire', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant
  const stored = ['2026-01-02 03:04:05+00', '2026-01-02 03:04:05.1+00', '2026-01-02 03:04:05.12+00', '2026-01-02 03:04:05.123+00']
  const wire = ['2026-01-02T03:04:05.000Z', '2026-01-02T03:04:05.100Z', '2026-01-02T03:04:05.120Z', '2026-01-02T03:04:05.123Z']
  const ids: number[] = []

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Wire')
    other = await createTenant(t, 'Elsewhere')
    for (const [i, at] of stored.entries()) {
      const res = await t.http().post('/contacts').set(tenant.key).send({ first_name: `Stamp ${i}`, last_name: 'Wire' })
      expect(res.status).toBe(201)
      ids.push(res.body.id)
      await t.db('contacts').where({ id: res.body.id }).update({ created_at: at })
    }
  })
  afterAll(async () => t?.close())

  it('rewrites what a UTC session sends and agrees with the Date for any other offset, era or year', async () => {
    const parse = pg.types.getTypeParser(1184, 'text') as (text: string) => Date
    const asDate = (text: string) => parse(text).toISOString()
    for (const text of stored) expect(timestampText(text)).toBe(asDate(text))
    // The database's own text, in UTC and in zones with other offsets, fractions of 0 to 6 digits.
    for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Europe/London']) {
      const texts: string[] = await t.db.transaction(async (trx) => {
        await trx.raw(`SET LOCAL TimeZone = '${zone}'`)
        const { rows } = await trx.raw(`
          SELECT (timestamptz '2026-03-29 00:30:00+00' + n * interval '37 minutes 13.4567 seconds')::text AS text FROM generate_series(0, 200) AS n
          UNION ALL SELECT (timestamptz '2026-03-29 00:30:00.5+00' + n * interval '1 hour')::timestamptz(3)::text FROM generate_series(0, 30) AS n`)
        return rows.map((row: { text: string }) => row.text)
      })
      for (const text of texts) expect(timestampText(text), text).toBe(asDate(text))
    }
    expect(timestampText('10000-01-01 00:00:00+00')).toBe(asDate('10000-01-01 00:00:00+00'))
    expect(timestampText('0044-03-15 12:00:00+00 BC')).toBe(asDate('0044-03-15 12:00:00+00 BC'))
    expect(timestampText('2026-11-25 13:18:53.999999+00')).toBe('2026-11-25T13:18:53.999Z')
  })

  it('answers a client every read path with the text JSON wrote for the Date', async () => {
    const internal: any[] = await Promise.all(ids.map((id) => t.app.service('contacts').get(id, { system: true } as any)))
    for (const record of internal) expect(record.created_at).toBeInstanceOf(Date)
    expect(internal.map((record) => record.created_at.toISOString())).toEqual(wire)
    // A client's call (a provider) on a Postgres server gets the text itself, no Date made.
    const external = await (t.app.service('contacts') as any)._get(ids[1], { provider: 'rest' })
    expect(external.created_at).toEqual(isEmbedded(t.db) ? new Date(wire[1]) : wire[1])

    for (const [i, id] of ids.entries()) {
      const one = await t.http().get(`/contacts/${id}`).set(tenant.key)
      expect(one.status).toBe(200)
      expect(one.body.created_at).toBe(wire[i])
      expect(one.body.updated_at).toBe(internal[i].updated_at.toISOString())
    }
    const firstPage = await t.http().get('/contacts').set(tenant.key).send({ query: { organization_id: tenant.organization.id } })
    const filtered = await t.http().get('/contacts').set(tenant.key).send({ query: { last_name: 'Wire', $sort: { id: 1 } } })
    for (const page of [firstPage, filtered]) {
      expect(page.status).toBe(200)
      expect(page.body.data.map((row: any) => [row.id, row.created_at])).toEqual(ids.map((id, i) => [id, wire[i]]))
    }
    const withSelect = await t.http().get(`/contacts/${ids[3]}`).set(tenant.key).query({ $select: ['id', 'created_at'] })
    expect(withSelect.body).toMatchObject({ id: ids[3], created_at: wire[3] })
  })

  it('keeps another organization out of each read path', async () => {
    expect((await t.http().get(`/contacts/${ids[0]}`).set(other.key)).status).toBe(404)
    const forbidden = await t.http().get('/contacts').set(other.key).send({ query: { organization_id: tenant.organization.id } })
    expect(forbidden.status).toBe(403)
    const theirs = await t.http().get('/contacts').set(other.key).send({ query: { last_name: 'Wire' } })
    expect(theirs.status).toBe(200)
    expect(theirs.body.data).toEqual([])
  })
})
