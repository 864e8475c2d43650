import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { WirePage, WireRecord, WireRequest } from '../../src/services/wire-pages.js'
import { isEmbedded } from '../../src/db.js'

/**
 * A list page a client asks for over HTTP is answered as the JSON text Postgres writes for each
 * record (src/services/wire-pages.ts). It must be exactly what the usual path (rows parsed, the
 * resolvers, JSON.stringify) sends for the same rows: every column type, custom-field values by
 * name (deleted definitions hidden, null values left out), relations, hidden columns, text that
 * needs escaping. Each page here is read both ways, with the service's wire shape on and off.
 * Wire pages ride on the compiled page statements of a Postgres server; on the embedded
 * database every page takes the usual path, and only the answers are compared.
 */
describe('wire pages', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant
  let otherCompanyId: number

  const list = (path: string, query: Record<string, unknown>, as: Tenant = tenant) => t.http().get(path).set(as.key).send({ query })
  const post = (path: string, body: Record<string, unknown>, as: Tenant = tenant) => t.http().post(path).set(as.key).send(body)
  const created = (res: { status: number; body: any }) => {
    if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
  const serviceOf = (path: string) => t.app.service(path.slice(1) as any) as any

  const read = (path: string, id: number, query: Record<string, unknown> = {}, as: Tenant = tenant) =>
    t.http().get(`${path}/${id}`).query(query).set(as.key)

  /** A request both ways: as wire text (its statements counted), and by the usual path. */
  async function compared(path: string, request: () => Promise<{ status: number; body: any; headers: Record<string, string> }>) {
    const { result: wire, sql } = await countQueries(t.db, request, { keepTexts: true })
    const service = serviceOf(path)
    const shape = service.options.wire
    service.options.wire = undefined
    try {
      const usual = await request()
      return { wire, usual, sql }
    } finally {
      service.options.wire = shape
    }
  }

  /** The page both ways: as wire text (one statement, crm_wire), and by the usual path. */
  const bothWays = (path: string, query: Record<string, unknown>) => compared(path, () => list(path, query))

  beforeAll(async () => {
    // Whole pages are not kept (record-pages.ts, tested in record-pages.test.ts): these count the statements below them.
    t = await startApp({ pageCacheMb: 0 })
    tenant = await createTenant(t, 'Wire')
    other = await createTenant(t, 'Elsewhere')
    const member = await addMember(t, tenant, 'member')
    otherCompanyId = created(await post('/companies', { name: 'Theirs' }, other)).id
    const fields = [
      { key: 'tier', name: 'Tier "A"', field_type: 'select', options: ['gold', 'silver'] },
      { key: 'score', name: 'Score', field_type: 'number' },
      { key: 'tags', name: 'Tags ✓', field_type: 'multiselect', options: ['x', 'y', 'z'] },
      { key: 'since', name: 'Since', field_type: 'date' },
      { key: 'vip', name: 'VIP', field_type: 'boolean' },
      { key: 'gone', name: 'Gone', field_type: 'text' }
    ]
    for (const entity of ['contact', 'company', 'deal']) {
      for (const [position, field] of fields.entries()) created(await post('/custom-fields', { entity_type: entity, position: 10 - position, ...field }))
    }
    const values = (i: number) => ({
      'Tier "A"': i % 2 ? 'gold' : 'silver', Score: i === 2 ? 12.5 : i * 1000, 'Tags ✓': ['z', 'x'], Since: '2026-02-28', VIP: i % 2 === 0, Gone: 'kept'
    })
    const pipeline = created(await post('/pipelines', { name: 'Sales' }))
    const stage = created(await post('/pipeline-stages', { pipeline_id: pipeline.id, name: "Négociation l'été", position: 0 }))
    for (let i = 0; i < 6; i++) {
      const name = [`Plain ${i}`, 'Quote " back \\ slash', 'Line\nbreak\ttab\u0001ctl', 'Émoji 🚀 ünïcode', '<script>&amp;</script>', "O'Brien"][i]
      const company = created(await post('/companies', {
        name, website: i % 2 ? `https://c${i}.example` : undefined, ...(i < 4 ? { custom_fields_by_name: values(i) } : {})
      }))
      const contact = created(await post('/contacts', {
        first_name: name, last_name: i === 2 ? undefined : 'Wire', email: `w${i}@example.test`, phone: i % 2 ? '+33 6 12 34 56 78' : undefined,
        company_id: company.id, owned_by_user_id: member.user.id, ...(i !== 3 ? { custom_fields_by_name: values(i) } : {})
      }))
      created(await post('/deals', {
        name, amount: ['1234.50', '0.01', '99999999.99', '0', '10', '3.10'][i], currency: 'EUR', status: ['open', 'won', 'lost'][i % 3],
        pipeline_id: pipeline.id, pipeline_stage_id: stage.id, company_id: company.id, contact_id: i === 1 ? undefined : contact.id,
        expected_close_date: i % 2 ? '2026-12-31' : undefined, ...(i % 3 ? { owned_by_user_id: member.user.id } : {}),
        custom_fields_by_name: { ...values(i), Score: i % 2 ? null : 7 }
      }))
      created(await post('/activities', {
        subject: name, start_date: '2026-03-02', start_time: i % 2 ? '09:30' : undefined, activity_type: 'call', note: i % 2 ? name : undefined,
        company_id: company.id, contact_id: contact.id, ...(i % 2 ? { location: 'Paris', location_geocoded: { lat: 48.8566, lng: 2.3522, address: 'Paris, France' } } : {})
      }))
    }
    // A deleted definition's stored values stay stored but are never sent.
    const gone = (await t.db('custom_fields').where({ organization_id: tenant.organization.id, key: 'gone' }).select('id')) as { id: number }[]
    for (const { id } of gone) expect((await t.http().delete(`/custom-fields/${id}`).set(tenant.key)).status).toBe(200)
  })
  afterAll(async () => t?.close())

  const cases: [string, Record<string, unknown>][] = [
    ['/contacts', {}],
    ['/contacts', { fastJoinForContactList: true, $sort: { first_name: -1 }, $limit: 4, $skip: 1 }],
    ['/companies', { fastJoinForCompanyList: true }],
    ['/deals', { fastJoinForDealsList: true, $limit: 50 }],
    ['/deals', { status: { $in: ['won', 'lost'] }, $sort: { amount: -1 } }],
    ['/activities', { fastJoinForActivityList: true, start_date: { $gte: '2026-03-01', $lte: '2026-03-31' } }],
    ['/activities', { done: false, $limit: 3, $skip: 3 }]
  ]

  /** Whether a list asks for its relations. */
  const joined = (filters: Record<string, unknown>) => Object.keys(filters).some((key) => key.startsWith('fastJoin'))
  /** Whether a list asks for anything but its organization and paging: such a page's statement reads keys only, and versions come by key (two statements). */
  const filteredList = (filters: Record<string, unknown>) => Object.keys(filters).some((key) => !['$limit', '$skip'].includes(key) && !key.startsWith('fastJoin'))

  for (const [path, filters] of cases) {
    const filtered = filteredList(filters)
    it(`sends ${path} ${JSON.stringify(filters)} as the usual path does, in ${filtered ? 'two statements (keys, then versions by key)' : 'one statement'} once its records' texts are kept`, async () => {
      const query = { organization_id: tenant.organization.id, ...filters }
      await list(path, query)
      const first = await countQueries(t.db, () => list(path, query))
      const { wire, usual, sql } = await bothWays(path, query)
      expect(wire.status, JSON.stringify(wire.body)).toBe(200)
      expect(wire.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(wire.body.data.length).toBeGreaterThan(0)
      if (!isEmbedded(t.db)) {
        // The page statement selects ids and the total: the unfiltered page (named) each record's
        // version too; a filtered page (planned for its values) reads the versions by key.
        expect(sql.length, sql.join('\n')).toBe(filtered ? 2 : 1)
        expect(sql[0]).toMatch(/^select "\w+"\."id", /)
        expect(sql[0].includes('AS crm_version')).toBe(!filtered)
        if (filtered) expect(sql[1]).toMatch(/^SELECT "\w+"\.id, .* AS crm_version(, .* AS crm_mark)? FROM unnest\(\$2::int4\[\]\) WITH ORDINALITY/s)
        // A joined page reads its records' own versions and its relations' change mark, not each relation's version.
        const versions = sql[filtered ? 1 : 0]
        expect(versions.includes('AS crm_mark')).toBe(joined(filters))
        const table = path.slice(1)
        expect([...versions.matchAll(/"(\w+)"\.xmin/g)].map((match) => match[1]).filter((name) => name !== table)).toEqual([])
        // The texts were read by key the first time, and kept: the second read writes none.
        expect(sql.some((text) => text.includes('crm_wire'))).toBe(false)
        expect(first.sql, first.sql.join('\n')).toHaveLength(sql.length + 1)
        expect(first.sql[first.sql.length - 1]).toContain('crm_wire')
        expect(first.result.body).toEqual(wire.body)
      }
      expect(wire.body).toEqual(usual.body)
      // Key for key, in the usual order (JSON equality above ignores the order of keys).
      expect(wire.body.data.map(Object.keys)).toEqual(usual.body.data.map(Object.keys))
    })
  }

  it('sends a contact or a company by id as the usual path does, in one statement', async () => {
    for (const path of ['/contacts', '/companies']) {
      const ids: number[] = (await list(path, { organization_id: tenant.organization.id, $sort: { id: 1 } })).body.data.map((record: any) => record.id)
      expect(ids.length).toBeGreaterThan(5)
      for (const id of ids) {
        await read(path, id)
        const { wire, usual, sql } = await compared(path, () => read(path, id))
        expect(wire.status, JSON.stringify(wire.body)).toBe(200)
        expect(wire.headers['content-type']).toBe('application/json; charset=utf-8')
        if (!isEmbedded(t.db)) {
          expect(sql.length, sql.join('\n')).toBe(1)
          expect(sql[0]).toContain('crm_wire')
        }
        expect(wire.body).toEqual(usual.body)
        expect(Object.keys(wire.body)).toEqual(Object.keys(usual.body))
        expect(wire.body).not.toHaveProperty('custom_fields')
        expect(wire.body).toHaveProperty('custom_fields_by_name')
      }
    }
  })

  it('reads by id the usual way where something after the read looks at the record', async () => {
    const org = tenant.organization.id
    const [contact] = (await list('/contacts', { organization_id: org, $sort: { id: 1 } })).body.data
    // Relations asked for, or $select: the record, then the join or the pick.
    const joined = await countQueries(t.db, () => read('/contacts', contact.id, { fastJoinForContactList: true }))
    expect(joined.result.status).toBe(200)
    expect(joined.result.body.company).toMatchObject({ id: contact.company_id })
    expect(joined.sql.some((sql) => sql.includes('crm_wire'))).toBe(false)
    const selected = await countQueries(t.db, () => read('/contacts', contact.id, { $select: ['first_name'] }))
    expect(selected.result.body).toEqual({ id: contact.id, first_name: contact.first_name })
    expect(selected.sql.some((sql) => sql.includes('crm_wire'))).toBe(false)
    // Deals attach their relations to every read by id.
    const [deal] = (await list('/deals', { organization_id: org, $sort: { id: 1 } })).body.data
    const dealRead = await countQueries(t.db, () => read('/deals', deal.id))
    expect(dealRead.result.body.pipelineStage).toMatchObject({ id: deal.pipeline_stage_id })
    expect(dealRead.sql.some((sql) => sql.includes('crm_wire'))).toBe(false)
    // A call with params copied from a request gets the record itself.
    const caller = { userId: tenant.user.id, apiKeyOrganizationId: org, roles: new Map([[org, 'owner' as const]]) }
    const record = await serviceOf('/contacts').get(contact.id, {
      provider: 'rest', authenticated: true, user: tenant.user, caller, query: {}, wireRequest: new WireRequest({ hook: {} })
    })
    expect(record).not.toBeInstanceOf(WireRecord)
    expect(record.first_name).toBe(contact.first_name)
  })

  it('reads by id the usual way for a timestamp outside what the SQL formats, and answers 404 for a missing or deleted record', async () => {
    const [contact] = await t.db('contacts').where({ organization_id: tenant.organization.id }).orderBy('id').limit(1).select('id', 'created_at')
    await t.db('contacts').where({ id: contact.id }).update({ created_at: t.db.raw(`'10000-01-01 00:00:00+00'::timestamptz`) })
    try {
      await read('/contacts', contact.id)
      const { wire, usual, sql } = await compared('/contacts', () => read('/contacts', contact.id))
      expect(wire.status).toBe(200)
      if (!isEmbedded(t.db)) {
        expect(sql[0]).toContain('crm_wire')
        expect(sql.slice(1).some((text) => text.includes('crm_wire'))).toBe(false)
      }
      expect(wire.body.created_at).toBe('+010000-01-01T00:00:00.000Z')
      expect(wire.body).toEqual(usual.body)
    } finally {
      await t.db('contacts').where({ id: contact.id }).update({ created_at: contact.created_at })
    }
    const gone = created(await post('/contacts', { first_name: 'Soon gone' }))
    expect((await t.http().delete(`/contacts/${gone.id}`).set(tenant.key)).status).toBe(200)
    for (const id of [gone.id, 2 ** 31 - 1]) {
      const missing = await read('/contacts', id)
      expect(missing.status).toBe(404)
      expect(missing.body).toMatchObject({ name: 'NotFound', code: 404 })
    }
    await t.db('contacts').where({ id: gone.id }).del()
  })

  it('sends keyset pages ($after, $withDeleted) as the usual path does, with the same next cursor', async () => {
    const gone = created(await post('/contacts', { first_name: 'Deleted', email: 'gone@example.test', custom_fields_by_name: { Score: 3 } }))
    expect((await t.http().delete(`/contacts/${gone.id}`).set(tenant.key)).status).toBe(200)
    let $after: unknown = { updated_at: '2000-01-01T00:00:00.000Z', id: 0 }
    const seen: number[] = []
    const sizes: number[] = []
    for (let page = 0; page < 5 && $after; page++) {
      const query = { organization_id: tenant.organization.id, $withDeleted: true, $limit: 3, $sort: { updated_at: 1, id: 1 }, $after }
      await list('/contacts', query)
      const { wire, usual, sql } = await bothWays('/contacts', query)
      expect(wire.status, JSON.stringify(wire.body)).toBe(200)
      if (!isEmbedded(t.db)) expect(sql.filter((text) => text.includes('crm_wire')), sql.join('\n')).toHaveLength(1)
      expect(wire.body).toEqual(usual.body)
      expect(wire.body.data.map(Object.keys)).toEqual(usual.body.data.map(Object.keys))
      expect(Object.keys(wire.body)).toEqual(['limit', 'skip', 'next', 'data'])
      seen.push(...wire.body.data.map((contact: any) => contact.id))
      sizes.push(wire.body.data.length)
      $after = wire.body.next
    }
    // Seven contacts, the deleted one among them, in pages of 3, 3 and 1, then an empty one with no next.
    expect(sizes).toEqual([3, 3, 1, 0])
    expect(new Set(seen).size).toBe(7)
    expect(seen).toContain(gone.id)
    await t.db('contacts').where({ id: gone.id }).del()
  })

  it('writes custom-field values, escapes and exact amounts as the resolvers do', async () => {
    const deals = (await list('/deals', { organization_id: tenant.organization.id, $sort: { id: 1 } })).body.data
    expect(deals.map((deal: any) => deal.amount)).toEqual(['1234.50', '0.01', '99999999.99', '0.00', '10.00', '3.10'])
    expect(deals[2].name).toBe('Line\nbreak\ttab\u0001ctl')
    expect(deals[0].custom_fields_by_name).toEqual({ 'Tier "A"': 'silver', Score: 7, 'Tags ✓': ['z', 'x'], Since: '2026-02-28', VIP: true })
    // A null value is left out; the deleted definition's value is not sent.
    expect(deals[1].custom_fields_by_name).toEqual({ 'Tier "A"': 'gold', 'Tags ✓': ['z', 'x'], Since: '2026-02-28', VIP: false })
    expect(deals[0]).not.toHaveProperty('custom_fields')
    expect(deals[1].won_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const contacts = (await list('/contacts', { organization_id: tenant.organization.id, $sort: { id: 1 } })).body.data
    expect(contacts[3].custom_fields_by_name).toEqual({})
    expect(contacts[0]).not.toHaveProperty('search_name')
    expect(contacts[0]).not.toHaveProperty('phone_normalized')
    const activities = (await list('/activities', { organization_id: tenant.organization.id, $sort: { id: 1 } })).body.data
    expect(activities[1]).toMatchObject({ start_time: '09:30:00', location_geocoded: { lat: 48.8566, lng: 2.3522, address: 'Paris, France' } })
  })

  it('follows a renamed definition, as the resolvers read definitions per call', async () => {
    const [{ id }] = await t.db('custom_fields').where({ organization_id: tenant.organization.id, entity_type: 'contact', key: 'score' }).select('id')
    expect((await t.http().patch(`/custom-fields/${id}`).set(tenant.key).send({ name: 'Points' })).status).toBe(200)
    const { wire, usual } = await bothWays('/contacts', { organization_id: tenant.organization.id, $sort: { id: 1 } })
    expect(wire.body.data[1].custom_fields_by_name).toHaveProperty('Points', 1000)
    expect(wire.body).toEqual(usual.body)
  })

  it('reads keyed records in the order of their keys, as they are now, within the organization only', async () => {
    if (isEmbedded(t.db)) return
    const companies = serviceOf('/companies')
    const mine = (await list('/companies', { organization_id: tenant.organization.id, $sort: { id: 1 } })).body.data.map((company: { id: number }) => company.id)
    const gone = created(await post('/companies', { name: 'Deleted between the two statements' })).id
    expect((await t.http().delete(`/companies/${gone}`).set(tenant.key)).status).toBe(200)
    const params = { query: { organization_id: tenant.organization.id } }
    // The keys as a page statement would have read them: one deleted since, one of another organization.
    const keys = [mine[2], gone, otherCompanyId, mine[0], mine[1]].map((id) => ({ id }))
    const wire = await companies.wireSqlOf(undefined)
    const parsed = (rows: { id: number; crm_wire: string; crm_version: string }[]) => rows.map((row) => JSON.parse(row.crm_wire))
    const records = parsed(await companies.wireRecordsByKey(params, wire, keys))
    expect(records.map((record) => record.id)).toEqual([mine[2], mine[0], mine[1]])
    const usual = await Promise.all([mine[2], mine[0], mine[1]].map((id) => read('/companies', id)))
    expect(records).toEqual(usual.map((res) => res.body))
    expect(await companies.wireRecordsByKey(params, wire, [])).toEqual([])
    // Their versions, read by key the same way.
    const versions: { id: number; crm_version: string }[] = await companies.byKey(params, wire.versionsByKey, keys, 'versions')
    expect(versions.map((row) => row.id)).toEqual([mine[2], mine[0], mine[1]])
    expect(versions.every((row) => /^\d+(\/|$)/.test(row.crm_version))).toBe(true)
  })

  it('writes a record again when it, a relation or a custom-field definition changed, and only that record', async () => {
    const query = { organization_id: tenant.organization.id, fastJoinForDealsList: true, $limit: 50 }
    // Texts written by Postgres for the page (none on the embedded database, which has no wire pages).
    const written = (n: number) => (isEmbedded(t.db) ? 0 : n)
    const page = async () => {
      const { wire, usual, sql } = await bothWays('/deals', query)
      expect(wire.status, JSON.stringify(wire.body)).toBe(200)
      expect(wire.body).toEqual(usual.body)
      return { body: wire.body, written: sql.filter((text) => text.includes('crm_wire')).length, statements: sql.length }
    }
    // Statements of a page on the server: the page's (with its records' own versions and the
    // relations' change mark), the relations' versions by key where the mark moved, the texts.
    const statements = (n: number) => (isEmbedded(t.db) ? expect.any(Number) : n)
    await page()
    expect((await page())).toMatchObject({ written: 0, statements: statements(1) })
    const deals = (await page()).body.data as Record<string, any>[]
    const [deal, other] = [deals[0], deals[deals.length - 1]]
    const contactId = deals.find((record) => record.contact)!.contact.id
    const [definition] = await t.db('custom_fields').where({ organization_id: tenant.organization.id, entity_type: 'deal', key: 'tier' }).select('id')
    const patch = (path: string, id: number, body: Record<string, unknown>) => t.http().patch(`${path}/${id}`).set(tenant.key).send(body)
    try {
      expect((await patch('/deals', deal.id, { name: 'Renamed deal' })).status).toBe(200)
      let after = await page()
      // The deal's own row changed, no relation did: its text is read, no relation is probed.
      expect(after).toMatchObject({ written: written(1), statements: statements(2) })
      expect(after.body.data[0].name).toBe('Renamed deal')
      expect((await page())).toMatchObject({ written: 0, statements: statements(1) })

      // A relation changed: every deal of that company is written again.
      expect((await patch('/companies', other.company.id, { name: 'Renamed company' })).status).toBe(200)
      after = await page()
      // The companies' mark moved: the relations' versions are read, and one text.
      expect(after).toMatchObject({ written: written(1), statements: statements(3) })
      expect(after.body.data.filter((record: any) => record.company?.id === other.company.id).every((record: any) => record.company.name === 'Renamed company')).toBe(true)
      expect((await page())).toMatchObject({ written: 0, statements: statements(1) })

      // A relation deleted joins as null; a definition renamed changes the names of stored values.
      expect((await t.http().delete(`/contacts/${contactId}`).set(tenant.key)).status).toBe(200)
      after = await page()
      expect(after.body.data.filter((record: any) => record.contact_id === contactId).every((record: any) => record.contact === null)).toBe(true)
      expect((await patch('/custom-fields', definition.id, { name: 'Level' })).status).toBe(200)
      after = await page()
      expect(after.body.data.some((record: any) => 'Level' in record.custom_fields_by_name)).toBe(true)
      expect(after.body.data.some((record: any) => 'Tier "A"' in record.custom_fields_by_name)).toBe(false)
      expect((await page()).written).toBe(0)
    } finally {
      // As it was, for the tests below.
      await patch('/custom-fields', definition.id, { name: 'Tier "A"' })
      await patch('/deals', deal.id, { name: deal.name })
      await patch('/companies', other.company.id, { name: other.company.name })
      await t.db('contacts').where({ id: contactId }).update({ deleted_at: null })
    }
  })

  it("probes no relation for a write of another organization's or of a table the relations do not read, and follows a user's rename", async () => {
    if (isEmbedded(t.db)) return
    const query = { organization_id: tenant.organization.id, fastJoinForDealsList: true, $limit: 50 }
    const page = async () => {
      const { wire, usual, sql } = await bothWays('/deals', query)
      expect(wire.status, JSON.stringify(wire.body)).toBe(200)
      expect(wire.body).toEqual(usual.body)
      return { body: wire.body, statements: sql.length, written: sql.filter((text) => text.includes('crm_wire')).length }
    }
    await page()
    expect(await page()).toMatchObject({ statements: 1, written: 0 })
    const patch = (path: string, id: number, body: Record<string, unknown>, as: Tenant = tenant) => t.http().patch(`${path}/${id}`).set(as.key).send(body)
    // Another organization's company: its own organization's mark moves, not ours.
    expect((await patch('/companies', otherCompanyId, { name: 'Theirs, renamed' }, other)).status).toBe(200)
    expect(await page()).toMatchObject({ statements: 1, written: 0 })
    // A table no relation of a deal reads (an activity).
    const [activity] = (await list('/activities', { organization_id: tenant.organization.id, $limit: 1 })).body.data
    expect((await patch('/activities', activity.id, { note: 'marks' })).status).toBe(200)
    expect(await page()).toMatchObject({ statements: 1, written: 0 })
    // A user (global): the users' mark moves, the relations' versions are read, and the deals that
    // user owns are written again (in one statement).
    const owner = (await page()).body.data.find((deal: any) => deal.owner)!.owner
    await t.db('users').where({ id: owner.id }).update({ first_name: 'Renamed owner' })
    try {
      const after = await page()
      expect(after).toMatchObject({ statements: 3, written: 1 })
      expect(after.body.data.filter((deal: any) => deal.owner?.id === owner.id).every((deal: any) => deal.owner.first_name === 'Renamed owner')).toBe(true)
      expect(await page()).toMatchObject({ statements: 1, written: 0 })
    } finally {
      await t.db('users').where({ id: owner.id }).update({ first_name: owner.first_name })
    }
  })

  it("never answers one organization's page with a text kept for another's, even for the same id and version", async () => {
    if (isEmbedded(t.db)) return
    // Two companies of one id, one in each organization, written by one transaction: the same xmin,
    // no relations, no custom-field values, so the same version.
    const { rows: [{ id }] } = await t.db.raw("SELECT nextval('companies_id_seq')::int AS id")
    await t.db.transaction(async (trx) => {
      await trx('companies').insert({ id, organization_id: tenant.organization.id, name: 'Ours, same id' })
      await trx('companies').insert({ id, organization_id: other.organization.id, name: 'Theirs, same id' })
    })
    try {
      const newest = (as: Tenant) => list('/companies', { organization_id: as.organization.id, $sort: { id: -1 }, $limit: 1 }, as)
      for (let i = 0; i < 2; i++) {
        expect((await newest(tenant)).body.data).toMatchObject([{ id, name: 'Ours, same id', organization_id: tenant.organization.id }])
        expect((await newest(other)).body.data).toMatchObject([{ id, name: 'Theirs, same id', organization_id: other.organization.id }])
      }
    } finally {
      await t.db('companies').where({ id }).delete()
    }
  })

  it('falls back to the usual path for a timestamp outside what the SQL formats', async () => {
    const [deal] = await t.db('deals').where({ organization_id: tenant.organization.id }).orderBy('id').limit(1).select('id', 'created_at')
    await t.db('deals').where({ id: deal.id }).update({ created_at: t.db.raw(`'10000-01-01 00:00:00+00'::timestamptz`) })
    try {
      const query = { organization_id: tenant.organization.id, $sort: { id: 1 } }
      await list('/deals', query)
      const { wire, usual, sql } = await bothWays('/deals', query)
      expect(wire.status).toBe(200)
      if (!isEmbedded(t.db)) {
        // The keys, their versions by key, the records by key (a null text: nothing kept), then the
        // usual page and its custom-field definitions.
        expect(sql.length, sql.join('\n')).toBe(5)
        expect(sql[2]).toContain('crm_wire')
        expect(sql.filter((text) => text.includes('crm_wire'))).toHaveLength(1)
      }
      expect(wire.body.data[0].created_at).toBe('+010000-01-01T00:00:00.000Z')
      expect(wire.body).toEqual(usual.body)
    } finally {
      await t.db('deals').where({ id: deal.id }).update({ created_at: deal.created_at })
    }
  })

  it('keeps the usual path for $select, an empty page past the end, and $limit 0', async () => {
    const query = { organization_id: tenant.organization.id }
    const selected = await countQueries(t.db, () => list('/deals', { ...query, $select: ['name', 'amount'] }))
    expect(selected.result.body.data[0]).toEqual({ id: expect.any(Number), name: 'Plain 0', amount: '1234.50' })
    expect(selected.sql.some((sql) => sql.includes('crm_wire'))).toBe(false)
    expect((await list('/deals', { ...query, $skip: 50 })).body).toEqual({ total: 6, limit: 10, skip: 50, data: [] })
    expect((await list('/deals', { ...query, $limit: 0 })).body).toEqual({ total: 6, limit: 0, skip: 0, data: [] })
    expect((await list('/deals', { ...query, name: 'nobody' })).body).toEqual({ total: 0, limit: 10, skip: 0, data: [] })
  })

  it('answers records, never wire text, to a call that is not the request itself', async () => {
    const org = tenant.organization.id
    // Params copied from a request (its WireRequest along) into another call.
    const caller = { userId: tenant.user.id, apiKeyOrganizationId: org, roles: new Map([[org, 'owner' as const]]) }
    const page = await serviceOf('/deals').find({
      provider: 'rest', authenticated: true, user: tenant.user, caller, query: { organization_id: org }, wireRequest: new WireRequest({ hook: {} })
    })
    expect(page).not.toBeInstanceOf(WirePage)
    expect(page.data[0].custom_fields).toBeDefined()
    // A page read as records by any hook is written the usual way (JSON of its records).
    const wirePage = new WirePage({ total: 1, limit: 10, skip: 0 }, ['{"id":1,"name":"x"}'])
    expect(wirePage.data[0].name).toBe('x')
    expect(JSON.parse(JSON.stringify(wirePage))).toEqual({ total: 1, limit: 10, skip: 0, data: [{ id: 1, name: 'x' }] })
  })

  it('writes a page as the UTF-8 bytes of its JSON text, multi-byte characters and empty pages included', () => {
    const pages: [Record<string, unknown>, string[]][] = [
      [{ total: 2, limit: 10, skip: 0 }, ['{"id":1,"name":"Zoë Ångström"}', '{"id":2,"name":"🙂 \\u0000 \\"quoted\\""}']],
      [{ limit: 100, skip: 0, next: null }, []],
      [{}, ['{"id":3}']]
    ]
    for (const [envelope, records] of pages) {
      const expected = JSON.stringify({ ...envelope, data: records.map((record) => JSON.parse(record)) })
      // Texts as strings, as kept UTF-8 bytes (record texts), or both in one page.
      for (const texts of [records, records.map((record) => Buffer.from(record)), records.map((record, i) => (i % 2 ? Buffer.from(record) : record))]) {
        const page = new WirePage(envelope, texts)
        const bytes = page.bytes()
        expect(bytes.toString('utf8')).toBe(expected)
        expect(bytes.length).toBe(Buffer.byteLength(expected))
        expect(page.toJSON()).toEqual(JSON.parse(expected))
      }
    }
  })

  it('stays inside the organization: other records absent, 404 by id, 403 for another organization, 400 for a foreign reference', async () => {
    const theirs = await list('/companies', { organization_id: other.organization.id }, other)
    expect(theirs.body.data.map((company: any) => company.id)).toEqual([otherCompanyId])
    const ours = await list('/companies', { organization_id: tenant.organization.id, fastJoinForCompanyList: true })
    expect(ours.body.data.map((company: any) => company.id)).not.toContain(otherCompanyId)
    expect((await t.http().get(`/companies/${otherCompanyId}`).set(tenant.key)).status).toBe(404)
    const theirContact = created(await post('/contacts', { first_name: 'Theirs' }, other))
    const byId = await countQueries(t.db, () => read('/contacts', theirContact.id))
    expect(byId.result.status).toBe(404)
    if (!isEmbedded(t.db)) expect(byId.sql.some((sql) => sql.includes('crm_wire'))).toBe(true)
    expect((await read('/contacts', theirContact.id, {}, other)).body.first_name).toBe('Theirs')
    expect((await list('/companies', { organization_id: other.organization.id })).status).toBe(403)
    const foreign = await post('/contacts', { first_name: 'X', company_id: otherCompanyId })
    expect(foreign.status).toBe(400)
    expect(foreign.body.errors).toHaveProperty('company_id')
  })
})
