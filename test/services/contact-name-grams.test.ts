import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { drainNameIndex } from '../../src/services/contacts/name-index.js'

/**
 * Name search for 3-4 character terms reads contact_name_grams (migration 20261123001500), kept
 * behind the writes (migration 20261127120000). These tests hold it to the meaning of the search:
 * for every such term, the same page, order and exact total as a partial match on the folded
 * name, through creates, renames, soft and hard deletes, both while the written contacts are
 * pending (the background drain is paused) and once drained; and the grams table, once drained,
 * equal to the grams recomputed from the live contacts.
 */
describe('contact name search on grams', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant

  const FIRST = ['Ada', 'Adam', 'Adèle', 'Kim', 'Turing', 'Grace', 'José', 'Åsa', 'Ida', 'Joan']
  const LAST = ['Lovelace', 'Hopper', 'Kimura', 'Adams', 'Turi', null, 'Ångström', 'da Silva', 'Byron']
  const TERMS = ['ada', 'adam', 'kim', 'turi', 'a lo', 'lace', 'ace', 'da s', 'jos', 'asa', 'ngst', 'zzz', 'a ad', 'n by', "o'b", '100%']

  const search = (as: Tenant, body: Record<string, unknown>) =>
    t.http().post('/contacts').set(as.key).set('X-Service-Method', 'search').send({ searchIn: 'name', ...body })

  /** What the search means: live contacts whose folded "first last" contains the term, in (first, last, id) order. */
  const expected = async (term: string) =>
    (await t.db.raw(
      `SELECT id FROM contacts WHERE organization_id = ? AND deleted_at IS NULL AND search_name LIKE '%' || ? || '%'
       ORDER BY first_name, last_name, id`,
      [tenant.organization.id, term.replace(/[\\%_]/g, (c) => `\\${c}`)]
    )).rows.map((row: { id: number }) => row.id)

  async function expectSearchesAgree() {
    for (const term of TERMS) {
      const want = await expected(term)
      const all = await search(tenant, { searchTerm: term, $limit: 100 })
      expect(all.status, JSON.stringify(all.body)).toBe(200)
      expect({ term, total: all.body.total, ids: all.body.data.map((c: any) => c.id) }).toEqual({ term, total: want.length, ids: want })
      const page = await search(tenant, { searchTerm: term.toUpperCase(), $limit: 2, $skip: 1 })
      expect({ term, total: page.body.total, ids: page.body.data.map((c: any) => c.id) }).toEqual({ term, total: want.length, ids: want.slice(1, 3) })
    }
  }

  const pendingRows = async () => Number((await t.db.raw('SELECT count(*) AS n FROM contact_name_pending')).rows[0].n)

  /** Drains every pending contact (another application's drain on a shared server database may hold the lock for a moment). */
  async function drainAll() {
    for (let attempt = 0; attempt < 100 && (await drainNameIndex(t.db, null)).drained === 0 && (await pendingRows()) > 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await pendingRows()).toBe(0)
  }

  /** Drains every pending contact, then: contact_name_grams of the organization against the grams recomputed from its live contacts. */
  async function expectGramsKept() {
    await drainAll()
    const stored = await t.db.raw(
      `SELECT gram, first_name, last_name, contact_id FROM contact_name_grams WHERE organization_id = ?
       ORDER BY contact_id, gram`, [tenant.organization.id])
    const recomputed = await t.db.raw(
      `SELECT DISTINCT substr(c.search_name, i, n) AS gram, c.first_name, c.last_name, c.id AS contact_id
       FROM contacts c, unnest('{3,4}'::int[]) AS n, generate_series(1, length(c.search_name) - n + 1) AS i
       WHERE c.organization_id = ? AND c.deleted_at IS NULL ORDER BY contact_id, gram`, [tenant.organization.id])
    expect(stored.rows.length).toBeGreaterThan(0)
    expect(stored.rows).toEqual(recomputed.rows)
    await expectCountsKept(tenant.organization.id)
  }

  /** contact_name_gram_counts of an organization (summed over slots) against its grams counted. */
  async function expectCountsKept(organizationId: number) {
    const counted = await t.db.raw(
      `SELECT gram, sum(entries)::int AS entries FROM contact_name_gram_counts WHERE organization_id = ?
       GROUP BY gram HAVING sum(entries) <> 0 ORDER BY gram`, [organizationId])
    const recounted = await t.db.raw(
      `SELECT gram, count(*)::int AS entries FROM contact_name_grams WHERE organization_id = ?
       GROUP BY gram ORDER BY gram`, [organizationId])
    expect(counted.rows).toEqual(recounted.rows)
  }

  beforeAll(async () => {
    t = await startApp()
    // Searches below run with the contacts written since the last drain pending; tests drain explicitly.
    await t.app.get('contactNameIndex').pause()
    tenant = await createTenant(t, 'Grams')
    other = await createTenant(t, 'Other grams')
    // One bulk create (a multi-row INSERT) and single creates, with repeated first names for the order's ties.
    const people = FIRST.flatMap((first, i) => LAST.slice(0, 3 + (i % 6)).map((last) => ({ first_name: first, last_name: last })))
    const bulk = await t.http().post('/contacts').set(tenant.key).send(people.slice(0, 30))
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(201)
    for (const person of people.slice(30)) expect((await t.http().post('/contacts').set(tenant.key).send(person)).status).toBe(201)
    await t.http().post('/contacts').set(tenant.key).send({ first_name: "O'Brien", last_name: '100% Byron' })
    await t.http().post('/contacts').set(other.key).send([{ first_name: 'Ada', last_name: 'Lovelace' }, { first_name: 'Kim', last_name: 'Turi' }])
  })
  afterAll(async () => { await t.close() })

  it('when contacts are created one by one and in bulk, then every 3-4 character term finds exactly the partial matches, in order, with the exact total, before and after the drain', async () => {
    expect(await pendingRows()).toBeGreaterThan(0)
    await expectSearchesAgree()
    await expectGramsKept()
    await expectSearchesAgree()
  })

  it('when contacts are renamed (also by case only, and back and forth), soft-deleted, restored and hard-deleted, then the search agrees at once and the grams once drained', async () => {
    const { rows } = await t.db.raw('SELECT id FROM contacts WHERE organization_id = ? AND deleted_at IS NULL ORDER BY id', [tenant.organization.id])
    const [renamed, recased, removed, restored, hardDeleted, lastNameOnly] = rows.map((row: { id: number }) => row.id)
    expect((await t.http().patch(`/contacts/${renamed}`).set(tenant.key).send({ first_name: 'Turing', last_name: 'Kimball' })).status).toBe(200)
    const before = (await t.http().get(`/contacts/${recased}`).set(tenant.key)).body
    expect((await t.http().patch(`/contacts/${recased}`).set(tenant.key).send({ first_name: before.first_name.toLowerCase() })).status).toBe(200)
    expect((await t.http().patch(`/contacts/${lastNameOnly}`).set(tenant.key).send({ last_name: null })).status).toBe(200)
    expect((await t.http().patch(`/contacts/${renamed}`).set(tenant.key).send({ email: 'no-name-change@example.test' })).status).toBe(200)
    expect((await t.http().delete(`/contacts/${removed}`).set(tenant.key)).status).toBe(200)
    expect((await t.http().delete(`/contacts/${restored}`).set(tenant.key)).status).toBe(200)
    await t.db.raw('UPDATE contacts SET deleted_at = NULL WHERE id = ?', [restored])
    await t.db.raw('DELETE FROM contacts WHERE id = ?', [hardDeleted])
    // Several changes of one contact between two drains: only the version in the grams counts.
    const [backAndForth, goneAndBack] = rows.slice(6).map((row: { id: number }) => row.id)
    for (const name of ['Kimura', 'Hopper', 'Kimura', 'Adams']) {
      expect((await t.http().patch(`/contacts/${backAndForth}`).set(tenant.key).send({ last_name: name })).status).toBe(200)
    }
    expect((await t.http().patch(`/contacts/${goneAndBack}`).set(tenant.key).send({ first_name: 'Adamo' })).status).toBe(200)
    expect((await t.http().delete(`/contacts/${goneAndBack}`).set(tenant.key)).status).toBe(200)
    await t.db.raw('UPDATE contacts SET deleted_at = NULL WHERE id = ?', [goneAndBack])

    await expectSearchesAgree()
    await expectGramsKept()
    await expectSearchesAgree()
    const turing = await search(tenant, { searchTerm: 'kimb' })
    expect(turing.body.data.map((c: any) => c.id)).toEqual([renamed])
  })

  it('when contacts are hard-deleted a few at a time and more than 10,000 at once (an organization cleared), then no gram of theirs is left', async () => {
    const bulk = await createTenant(t, 'Bulk grams')
    const organizationId = bulk.organization.id
    await t.db.raw(
      `INSERT INTO contacts (organization_id, first_name, last_name) SELECT ?, 'Bulk', 'Person ' || i FROM generate_series(1, 10050) AS i`,
      [organizationId]
    )
    const grams = async () => {
      await drainAll()
      return Number((await t.db.raw('SELECT count(*) AS n FROM contact_name_grams WHERE organization_id = ?', [organizationId])).rows[0].n)
    }
    const before = await grams()
    expect(before).toBeGreaterThan(10050 * 10)
    const few = await t.db.raw(`DELETE FROM contacts WHERE organization_id = ? AND last_name IN ('Person 1', 'Person 2', 'Person 3') RETURNING search_name`, [organizationId])
    expect(few.rows).toHaveLength(3)
    const perContact = (name: string) => new Set([3, 4].flatMap((n) => Array.from({ length: name.length - n + 1 }, (_, i) => name.slice(i, i + n)))).size
    expect(await grams()).toBe(before - few.rows.reduce((sum: number, row: { search_name: string }) => sum + perContact(row.search_name), 0))
    await expectCountsKept(organizationId)
    await t.db.raw('DELETE FROM contacts WHERE organization_id = ?', [organizationId])
    expect(await grams()).toBe(0)
    await expectCountsKept(organizationId)
    await expectGramsKept()
  }, 120_000)

  it("when another organization has the same names, then its contacts are neither listed nor counted, and asking for its organization_id is 403", async () => {
    const ours = await search(tenant, { searchTerm: 'ada' })
    expect(ours.body.total).toBe((await expected('ada')).length)
    expect(ours.body.data.every((c: any) => c.organization_id === tenant.organization.id)).toBe(true)
    const theirs = await search(other, { searchTerm: 'turi' })
    expect(theirs.body).toMatchObject({ total: 1, data: [{ first_name: 'Kim', last_name: 'Turi', organization_id: other.organization.id }] })
    const crossing = await search(tenant, { searchTerm: 'ada', organization_id: other.organization.id })
    expect(crossing.status).toBe(403)
  })

  it('when a page starts past the last match, then the data is empty and the total still exact', async () => {
    const want = await expected('ada')
    const res = await search(tenant, { searchTerm: 'ada', $skip: want.length + 5 })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ total: want.length, limit: 10, skip: want.length + 5, data: [] })
  })

  const zyxTotal = async () => (await search(tenant, { searchTerm: 'zyx' })).body.total

  it('when a write is rolled back, then the total does not count it; once committed, it does, and a delete takes it back', async () => {
    expect(await zyxTotal()).toBe(0)
    const rolledBack = await t.db.transaction()
    await rolledBack('contacts').insert({ organization_id: tenant.organization.id, first_name: 'Zyxa', last_name: 'Zyxb' })
    await rolledBack.rollback()
    expect(await zyxTotal()).toBe(0)
    await t.db.transaction((trx) => trx('contacts').insert({ organization_id: tenant.organization.id, first_name: 'Zyxa', last_name: 'Zyxb' }))
    expect(await zyxTotal()).toBe(1)
    await t.db('contacts').where({ organization_id: tenant.organization.id, first_name: 'Zyxa' }).delete()
    expect(await zyxTotal()).toBe(0)
    await expectGramsKept()
  })

  // Embedded Postgres has one connection: no reader beside an open writer.
  it.runIf(Boolean(process.env.DATABASE_URL))('when a write is not committed yet, then a search beside it does not count it', async () => {
    const trx = await t.db.transaction()
    try {
      await trx('contacts').insert({ organization_id: tenant.organization.id, first_name: 'Zyxa', last_name: 'Zyxb' })
      expect(await zyxTotal()).toBe(0)
    } finally {
      await trx.rollback()
    }
  })

  it('when the grams are truncated (as a TRUNCATE of contacts does), then the counters go with them', async () => {
    // In a transaction rolled back afterwards, and of the grams alone: other test files share a
    // server database, and a TRUNCATE of contacts would lock every table that references them.
    const trx = await t.db.transaction()
    try {
      await trx.raw('TRUNCATE contact_name_grams')
      const left = await trx.raw('SELECT (SELECT count(*) FROM contact_name_grams)::int AS grams, (SELECT count(*) FROM contact_name_gram_counts)::int AS counters')
      expect(left.rows[0]).toEqual({ grams: 0, counters: 0 })
    } finally {
      await trx.rollback()
    }
    await expectGramsKept()
  })

  it('when a 3-4 character term is searched, then the page is read from the grams index and the total from its counters, without visiting contacts beyond the page', async () => {
    const statements: { sql: string; bindings: unknown[] }[] = []
    const listener = (query: { sql: string; bindings: unknown[] }) => statements.push(query)
    t.db.on('query', listener)
    const res = await search(tenant, { searchTerm: 'kim' })
    t.db.removeListener('query', listener)
    expect(res.status).toBe(200)
    const reads = statements.filter((s) => s.sql.includes('contact_name_grams'))
    expect(reads).toHaveLength(1)
    const plan = await t.db.transaction(async (trx) => {
      // A test organization is small enough for a sequential scan; the question is whether the index serves the statement.
      await trx.raw('SET LOCAL enable_seqscan = off')
      await trx.raw('SET LOCAL enable_bitmapscan = off')
      // $1, $2… may repeat in the statement: each place takes its value.
      const { sql, bindings } = reads[0]
      const values = [...sql.matchAll(/\$(\d+)/g)].map((match) => bindings[Number(match[1]) - 1])
      const rows = (await trx.raw(`EXPLAIN ${sql.replace(/\$\d+/g, '?')}`, values as any[])).rows
      return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n')
    })
    expect(plan.match(/Index Only Scan using contact_name_grams_page/g), plan).toHaveLength(1)
    expect(plan).toMatch(/Index Scan using contact_name_gram_counts_pkey/)
    expect(plan).not.toMatch(/Seq Scan on contacts/)
  })

  // Embedded Postgres runs one statement at a time: only a server has concurrent renames.
  it.skipIf(!process.env.DATABASE_URL)('when contacts are renamed back and forth by 20 connections at once, then no rename fails with a deadlock and the counters stay exact', async () => {
    const ids: number[] = (await t.db('contacts').insert(
      Array.from({ length: 40 }, (_, i) => ({ organization_id: tenant.organization.id, first_name: 'Swap', last_name: i % 2 ? 'Lovelace' : 'Turing' }))
    ).returning('id')).map((row: { id: number }) => row.id)
    // More connections than counter slots: some of them share a slot, as a busy pool does.
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 })
    try {
      const clients = await Promise.all(Array.from({ length: 20 }, () => pool.connect()))
      const failures: string[] = []
      await Promise.all(clients.map(async (client, c) => {
        for (let round = 0; round < 15; round++) {
          const id = ids[(c * 2 + round) % ids.length]
          const name = (c + round) % 2 ? 'Turing' : 'Lovelace'
          await client.query('UPDATE contacts SET last_name = $1 WHERE organization_id = $2 AND id = $3', [name, tenant.organization.id, id])
            .catch((error: { code?: string }) => failures.push(String(error.code)))
        }
        client.release()
      }))
      expect(failures).toEqual([])
    } finally {
      await pool.end()
    }
    await expectSearchesAgree()
    for (const term of ['lov', 'turi', 'swa']) {
      const page = await search(tenant, { searchTerm: term, $limit: 1 })
      expect({ term, total: page.body.total }).toEqual({ term, total: (await expected(term)).length })
    }
  })
  it('when the application runs, then its background drain empties the pending contacts, in batches after a large import', async () => {
    const imported = await createTenant(t, 'Imported grams')
    await t.db.raw(
      `INSERT INTO contacts (organization_id, first_name, last_name) SELECT ?, 'Imported', 'Person ' || i FROM generate_series(1, 2500) AS i`,
      [imported.organization.id]
    )
    expect(await pendingRows()).toBeGreaterThanOrEqual(2500)
    t.app.get('contactNameIndex').resume()
    try {
      const started = Date.now()
      while ((await pendingRows()) > 0 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await pendingRows()).toBe(0)
    } finally {
      await t.app.get('contactNameIndex').pause()
    }
    const res = await search(imported, { searchTerm: 'port', $limit: 1 })
    expect(res.body.total).toBe(2500)
    await expectGramsKept()
  }, 60_000)

  it('when the index falls further behind than the backlog allows, then a write answers only once the drain has caught up', async () => {
    const contacts = t.app.service('contacts')
    const backlog = contacts.nameIndex!
    const limit = backlog.limit
    const behind = await createTenant(t, 'Behind grams')
    try {
      await t.db.raw(
        `INSERT INTO contacts (organization_id, first_name, last_name) SELECT ?, 'Behind', 'Person ' || i FROM generate_series(1, 200) AS i`,
        [behind.organization.id]
      )
      backlog.limit = 50
      backlog.report(await pendingRows())
      let answered = false
      const write = t.http().post('/contacts').set(behind.key).send({ first_name: 'Waiting', last_name: 'Writer' }).then((res) => {
        answered = true
        return res
      })
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(answered).toBe(false)
      t.app.get('contactNameIndex').resume()
      const res = await write
      expect(res.status).toBe(201)
      expect(await pendingRows()).toBeLessThanOrEqual(50)
    } finally {
      await t.app.get('contactNameIndex').pause()
      backlog.limit = limit
    }
    expect((await search(behind, { searchTerm: 'beh', $limit: 1 })).body.total).toBe(200)
    expect((await search(behind, { searchTerm: 'wait', $limit: 1 })).body.total).toBe(1)
  })

  // Embedded Postgres runs one statement at a time: only a server has drains beside writers.
  it.skipIf(!process.env.DATABASE_URL)('when drains run while 10 connections rename contacts, then every search agrees throughout and the grams agree once drained, and a second drain at once takes nothing', async () => {
    const ids: number[] = (await t.db('contacts').insert(
      Array.from({ length: 30 }, (_, i) => ({ organization_id: tenant.organization.id, first_name: 'Race', last_name: i % 2 ? 'Lovelace' : 'Kimura' }))
    ).returning('id')).map((row: { id: number }) => row.id)
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 12 })
    try {
      let renaming = true
      const renames = Promise.all(Array.from({ length: 10 }, async (_, c) => {
        for (let round = 0; renaming || round < 20; round++) {
          const id = ids[(c * 3 + round) % ids.length]
          await pool.query('UPDATE contacts SET last_name = $1 WHERE organization_id = $2 AND id = $3', [['Lovelace', 'Kimura', 'Adams'][(c + round) % 3], tenant.organization.id, id])
        }
      }))
      const drains = (async () => {
        for (let pass = 0; pass < 30; pass++) {
          await drainNameIndex(t.db, 7)
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      })()
      await drains.finally(() => { renaming = false })
      await renames
      // Two drains at once: the second finds the lock taken and returns at once with nothing.
      const [a, b] = await Promise.all([pool.connect(), pool.connect()])
      try {
        await a.query('BEGIN')
        await a.query('SELECT contact_name_index_drain(1)')
        expect((await b.query('SELECT drained FROM contact_name_index_drain(NULL)')).rows[0].drained).toBe(0)
        await a.query('COMMIT')
      } finally {
        a.release()
        b.release()
      }
    } finally {
      await pool.end()
    }
    await expectSearchesAgree()
    await expectGramsKept()
    await expectSearchesAgree()
  }, 60_000)
})
