import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/**
 * The calendar's total: GET /activities with a start_date range and nothing else sums the
 * trigger-maintained day counts (migration 20261125000100_activity_day_counts) instead of counting
 * the range row by row. Every total is compared with a count on the table itself, after each kind
 * of write that moves an activity into, out of or across the days.
 */
describe('activity day counts', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Calendar')
    other = await createTenant(t, 'Other calendar')
    // Both organizations have activities on the same days; some have no date, one is deleted.
    for (const [tenant, perDay] of [[acme, 3], [other, 2]] as const) {
      const rows = []
      for (let day = 1; day <= 20; day++) {
        for (let i = 0; i < perDay + (day % 3); i++) {
          rows.push({ organization_id: tenant.organization.id, subject: `Call ${day}.${i}`, start_date: `2026-04-${String(day).padStart(2, '0')}` })
        }
      }
      rows.push({ organization_id: tenant.organization.id, subject: 'Undated', start_date: null })
      rows.push({ organization_id: tenant.organization.id, subject: 'Gone', start_date: '2026-04-05', deleted_at: new Date() })
      // One statement for all: the statement-level insert trigger counts them per day.
      await t.db('activities').insert(rows)
    }
  })
  afterAll(async () => { await t.close() })

  const list = (tenant: Tenant, query: Record<string, unknown>) => t.http().get('/activities').set(tenant.key).send({ query })

  /** The live activities of the organization whose start_date passes `where`, counted on the table. */
  const counted = async (tenant: Tenant, where: (builder: any) => void) =>
    Number((await t.db('activities').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').where(where).count({ n: '*' }))[0].n)

  /** The day counts agree with the table for every organization and day (no row counted twice or forgotten). */
  async function expectCountsMatchTable() {
    const fromTable = await t.db('activities').whereNull('deleted_at').whereNotNull('start_date')
      .groupBy('organization_id', 'start_date').select('organization_id', t.db.raw('start_date::text AS day'), t.db.raw('count(*)::int AS n'))
    const fromCounts = await t.db('activity_day_counts').groupBy('organization_id', 'day').havingRaw('sum(live) <> 0')
      .select('organization_id', t.db.raw('day::text AS day'), t.db.raw('sum(live)::int AS n'))
    const key = (row: any) => `${row.organization_id} ${row.day}`
    const sorted = (rows: any[]) => rows.map((row) => `${key(row)} ${row.n}`).sort()
    expect(sorted(fromCounts)).toEqual(sorted(fromTable))
  }

  it('when the calendar lists a range, then its total is the live activities in it, summed from the day counts in the page\'s one statement', async () => {
    const ranges: [Record<string, unknown> | string, (builder: any) => void][] = [
      [{ $gte: '2026-04-03', $lte: '2026-04-09' }, (b) => b.whereBetween('start_date', ['2026-04-03', '2026-04-09'])],
      [{ $gt: '2026-04-03', $lt: '2026-04-09' }, (b) => b.where('start_date', '>', '2026-04-03').where('start_date', '<', '2026-04-09')],
      [{ $gte: '2026-04-15' }, (b) => b.where('start_date', '>=', '2026-04-15')],
      [{ $lt: '2026-04-02' }, (b) => b.where('start_date', '<', '2026-04-02')],
      [{ $gte: '2026-05-01', $lte: '2026-05-31' }, (b) => b.whereBetween('start_date', ['2026-05-01', '2026-05-31'])],
      ['2026-04-05', (b) => b.where('start_date', '2026-04-05')]
    ]
    for (const [range, where] of ranges) {
      const { result, sql } = await countQueries(t.db, () => list(acme, { start_date: range, fastJoinForActivityList: true }))
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      const expected = await counted(acme, where)
      expect(result.body.total, JSON.stringify(range)).toBe(expected)
      expect(result.body.data).toHaveLength(Math.min(10, expected))
      const reads = sql.filter((statement) => /from "activities"/.test(statement))
      expect(reads, JSON.stringify(range)).toHaveLength(1)
      expect(reads[0]).toContain('activity_day_counts')
      expect(reads[0]).not.toMatch(/count\(\*\)/i)
    }
    // Later pages and a page past the end keep the exact total.
    const later = await list(acme, { start_date: { $gte: '2026-04-01', $lte: '2026-04-07' }, $skip: 10, $limit: 5 })
    const week = await counted(acme, (b) => b.whereBetween('start_date', ['2026-04-01', '2026-04-07']))
    expect(later.body).toMatchObject({ total: week, skip: 10, limit: 5 })
    const past = await list(acme, { start_date: { $gte: '2026-04-01', $lte: '2026-04-07' }, $skip: week + 3 })
    expect(past.body).toMatchObject({ total: week, data: [] })
    const none = await list(acme, { start_date: { $gte: '2026-04-01', $lte: '2026-04-07' }, $limit: 0 })
    expect(none.body).toMatchObject({ total: week, data: [] })
  })

  it("when the calendar lists a week in the default order, then its keys are found by walking the live id index with the range checked on each entry", async () => {
    const statements: { sql: string; bindings: unknown[] }[] = []
    const listener = (query: { sql: string; bindings: unknown[] }) => statements.push(query)
    t.db.on('query', listener)
    const res = await list(acme, { start_date: { $gte: '2026-04-06', $lte: '2026-04-12' }, fastJoinForActivityList: true })
    t.db.removeListener('query', listener)
    expect(res.status).toBe(200)
    const [keys] = statements.filter((statement) => /from "activities"/.test(statement.sql))
    const plan = await t.db.transaction(async (trx) => {
      // A test organization is small enough for any plan; the question is what the index gives the walk in id order.
      for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await trx.raw(`SET LOCAL ${setting} = off`)
      // Without statistics (a database just made) every index of the walk looks alike to the planner.
      await trx.raw('ANALYZE activities')
      const values = [...keys.sql.matchAll(/\$(\d+)/g)].map((match) => keys.bindings[Number(match[1]) - 1])
      const rows = (await trx.raw(`EXPLAIN ${keys.sql.replace(/\$\d+/g, '?')}`, values as any[])).rows
      return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n')
    })
    expect(plan).toMatch(/Index (Only )?Scan using activities_live_id_start_date_key on activities/)
    // The range is a condition of the index scan, not a filter over the rows it returns.
    expect(plan).toMatch(/Index Cond: \(.*start_date >= .*start_date <= /)
    expect(plan).not.toMatch(/Filter: .*start_date/)
  })

  it('when a list has any other filter, deleted records or a range on another column, then its total is counted on the table', async () => {
    const range = { $gte: '2026-04-03', $lte: '2026-04-09' }
    for (const [query, where] of [
      [{ start_date: range, done: false }, (b: any) => b.whereBetween('start_date', ['2026-04-03', '2026-04-09']).where('done', false)],
      [{ start_date: range, subject: 'Call 4.1' }, (b: any) => b.whereBetween('start_date', ['2026-04-03', '2026-04-09']).where('subject', 'Call 4.1')],
      [{ end_date: range }, (b: any) => b.whereBetween('end_date', ['2026-04-03', '2026-04-09'])],
      [{ start_date: { $in: ['2026-04-03', '2026-04-04'] } }, (b: any) => b.whereIn('start_date', ['2026-04-03', '2026-04-04'])],
      [{ start_date: { $ne: '2026-04-03' } }, (b: any) => b.whereNot('start_date', '2026-04-03')]
    ] as [Record<string, unknown>, (b: any) => void][]) {
      const { result, sql } = await countQueries(t.db, () => list(acme, query))
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      expect(result.body.total, JSON.stringify(query)).toBe(await counted(acme, where))
      expect(sql.some((statement) => statement.includes('activity_day_counts')), JSON.stringify(query)).toBe(false)
    }
  })

  it('when activities are created, moved, undated, deleted or marked done, then the day counts follow exactly', async () => {
    const week = { $gte: '2026-04-10', $lte: '2026-04-16' }
    const totalOfWeek = async () => (await list(acme, { start_date: week })).body.total
    const inWeek = (b: any) => b.whereBetween('start_date', ['2026-04-10', '2026-04-16'])
    const before = await totalOfWeek()
    expect(before).toBe(await counted(acme, inWeek))

    const created = (await t.http().post('/activities').set(acme.key).send({ subject: 'New', start_date: '2026-04-12' }).expect(201)).body
    expect(await totalOfWeek()).toBe(before + 1)
    // Moved out of the week, then back into another of its days.
    await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ start_date: '2026-04-30' }).expect(200)
    expect(await totalOfWeek()).toBe(before)
    await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ start_date: '2026-04-16' }).expect(200)
    expect(await totalOfWeek()).toBe(before + 1)
    // Undated and dated again.
    await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ start_date: null }).expect(200)
    expect(await totalOfWeek()).toBe(before)
    await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ start_date: '2026-04-10' }).expect(200)
    expect(await totalOfWeek()).toBe(before + 1)
    // Marking done (one and in bulk) changes no day.
    await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ done: true, subject: 'Renamed' }).expect(200)
    const ids = (await t.db('activities').where({ organization_id: acme.organization.id }).where(inWeek).select('id')).map((row) => row.id)
    await t.http().patch('/activities').set(acme.key).send({ ids, done: true }).expect(200)
    expect(await totalOfWeek()).toBe(before + 1)
    // Deleted: gone from the total; a second delete is a 404 and changes nothing.
    await t.http().delete(`/activities/${created.id}`).set(acme.key).expect(200)
    await t.http().delete(`/activities/${created.id}`).set(acme.key).expect(404)
    expect(await totalOfWeek()).toBe(before)
    // Restored and removed for good by statements of other writers (a sync, an organization's deletion).
    await t.db('activities').where({ id: created.id }).update({ deleted_at: null })
    expect(await totalOfWeek()).toBe(before + 1)
    await t.db('activities').where({ id: created.id }).delete()
    expect(await totalOfWeek()).toBe(before)
    expect(await totalOfWeek()).toBe(await counted(acme, inWeek))
    await expectCountsMatchTable()
  })

  it('when writes of one organization land on the same days as another\'s, then neither total moves with the other\'s; their records stay out of reach', async () => {
    const week = { $gte: '2026-04-01', $lte: '2026-04-07' }
    const theirsBefore = (await list(other, { start_date: week })).body.total
    expect(theirsBefore).toBe(await counted(other, (b) => b.whereBetween('start_date', ['2026-04-01', '2026-04-07'])))
    const mine = (await t.http().post('/activities').set(acme.key).send({ subject: 'Mine', start_date: '2026-04-02' }).expect(201)).body
    expect((await list(other, { start_date: week })).body.total).toBe(theirsBefore)
    // By id: 404; another organization_id: 403; another organization's company in a body: 400.
    const theirs = (await t.http().post('/activities').set(other.key).send({ subject: 'Theirs', start_date: '2026-04-02' }).expect(201)).body
    expect((await t.http().patch(`/activities/${theirs.id}`).set(acme.key).send({ start_date: '2026-04-20' })).status).toBe(404)
    expect((await t.http().delete(`/activities/${theirs.id}`).set(acme.key)).status).toBe(404)
    const foreignList = await list(acme, { organization_id: other.organization.id, start_date: week })
    expect(foreignList.status).toBe(403)
    expect(foreignList.body).toMatchObject({ name: 'Forbidden', className: 'forbidden' })
    const company = (await t.http().post('/companies').set(other.key).send({ name: 'Their company' }).expect(201)).body
    const foreignReference = await t.http().patch(`/activities/${mine.id}`).set(acme.key).send({ company_id: company.id })
    expect(foreignReference.status).toBe(400)
    expect(foreignReference.body.errors).toEqual({ company_id: expect.any(String) })
    expect((await list(other, { start_date: week })).body.total).toBe(theirsBefore + 1)
    await expectCountsMatchTable()
  })
})
