import knexFactory from 'knex'
import type { Knex } from 'knex'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { CompiledReads } from '../../src/engine/compiled-reads.js'
import type { ReadValues } from '../../src/engine/compiled-reads.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

describe('reads compiled once per shape', () => {
  // Compiles only: this knex never connects.
  const db: Knex = knexFactory({ client: 'pg' })
  afterAll(() => db.destroy())

  /** A by-id read as the record service writes one, counting its builds. */
  const builder = () => {
    const built: ReadValues[] = []
    const build = async (values: ReadValues) => {
      built.push(values)
      const rows = db('contacts').select('contacts.*').where((q) => {
        for (const [column, value] of Object.entries(values.query)) {
          if (value && typeof value === 'object' && '$in' in value) q.whereIn(column, (value as { $in: number[] }).$in)
          else q.where(column, value as Knex.Value)
        }
      }).where('channel', 'sms').where('contacts.id', values.id as number).limit(1)
      return { raw: db.raw('SELECT row_to_json(r)::text AS answer FROM (?) AS r', [rows]) }
    }
    return { built, build }
  }

  it('when a shape is read again with other values, then it is built once and each call binds its own values to the same text', async () => {
    const reads = new CompiledReads()
    const { built, build } = builder()
    const first = await reads.statement(db, 'contacts', { query: { organization_id: 5 }, id: 7 }, build)
    const second = await reads.statement(db, 'contacts', { query: { organization_id: 6 }, id: 8 }, build)
    expect(built).toHaveLength(1)
    const direct = (await build({ query: { organization_id: 6 }, id: 8 })).raw.toSQL()
    expect(second.raw.toSQL().sql).toBe(direct.sql)
    expect(second.raw.toSQL().bindings).toEqual([6, 'sms', 8, 1])
    // The numbered form the server runs is kept too, with the call's own values.
    expect(second.native).toEqual({ sql: direct.toNative().sql, bindings: [6, 'sms', 8, 1] })
    expect(first.raw.toSQL().bindings).toEqual([5, 'sms', 7, 1])
  })

  it('when the query differs in its keys, the length of an $in, a null or the caller\'s key, then each is a shape of its own', async () => {
    const reads = new CompiledReads()
    const { built, build } = builder()
    const calls: [string, ReadValues][] = [
      ['contacts', { query: { organization_id: { $in: [1, 2] } }, id: 1 }],
      ['contacts', { query: { organization_id: { $in: [3, 4] } }, id: 2 }],
      ['contacts', { query: { organization_id: { $in: [1, 2, 3] } }, id: 1 }],
      ['contacts', { query: { organization_id: 1, owned_by_user_id: null }, id: 1 }],
      ['contacts', { query: { organization_id: 1, owned_by_user_id: 9 }, id: 1 }],
      ['deleted too', { query: { organization_id: 1, owned_by_user_id: 9 }, id: 1 }]
    ]
    const statements = []
    for (const [key, values] of calls) statements.push(await reads.statement(db, key, values, build))
    expect(built).toHaveLength(5)
    expect(statements[1].raw.toSQL().bindings).toEqual([3, 4, 'sms', 2, 1])
    expect(statements[3].raw.toSQL().sql).toContain('"owned_by_user_id" is null')
    expect(statements[4].raw.toSQL().bindings).toEqual([1, 9, 'sms', 1, 1])
  })

  it('when a value is written into the text (an identifier), then the shape is not kept and each call is built with its own values', async () => {
    const reads = new CompiledReads()
    const built: ReadValues[] = []
    const build = async (values: ReadValues) => {
      built.push(values)
      return { raw: db.raw('SELECT ?? FROM contacts WHERE id = ?', [values.query.column as string, values.id as number]) }
    }
    const first = await reads.statement(db, 'contacts', { query: { column: 'email' }, id: 1 }, build)
    const second = await reads.statement(db, 'contacts', { query: { column: 'phone' }, id: 2 }, build)
    expect(first.raw.toSQL().sql).toBe('SELECT "email" FROM contacts WHERE id = ?')
    expect(second.raw.toSQL().sql).toBe('SELECT "phone" FROM contacts WHERE id = ?')
    expect(second.raw.toSQL().bindings).toEqual([2])
  })
})

describe('reads by id through the compiled statements', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    await t?.close()
  })

  it('when reads of one shape alternate between organizations and callers, then each caller reads its own records only: 404 for another organization\'s, by key and by a JWT of two organizations', async () => {
    const contact = async (tenant: Tenant, first_name: string) =>
      (await t.http().post('/contacts').set(tenant.key).send({ first_name }).expect(201)).body
    const ada = await contact(acme, 'Ada')
    const grace = await contact(globex, 'Grace')
    // acme's owner also joins globex: her JWT reads with both organizations in scope.
    await t.db('organizations_users').insert({ organization_id: globex.organization.id, user_id: acme.user.id, role: 'member' })
    for (let round = 0; round < 3; round++) {
      expect((await t.http().get(`/contacts/${ada.id}`).set(acme.key)).body).toMatchObject({ id: ada.id, first_name: 'Ada' })
      expect((await t.http().get(`/contacts/${grace.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(`/contacts/${grace.id}`).set(globex.key)).body).toMatchObject({ id: grace.id, first_name: 'Grace' })
      expect((await t.http().get(`/contacts/${ada.id}`).set(globex.key)).status).toBe(404)
      expect((await t.http().get(`/contacts/${ada.id}`).set(globex.bearer)).status).toBe(404)
      expect((await t.http().get(`/contacts/${ada.id}`).set(acme.bearer)).body).toMatchObject({ first_name: 'Ada' })
      expect((await t.http().get(`/contacts/${grace.id}`).set(acme.bearer)).body).toMatchObject({ first_name: 'Grace' })
      expect((await t.http().get(`/contacts/${grace.id}`).set(acme.bearer).query({ organization_id: acme.organization.id })).status).toBe(404)
      expect((await t.http().get(`/contacts/${ada.id}`).set(acme.key).query({ $select: ['first_name'] })).body).toEqual({ id: ada.id, first_name: 'Ada' })
    }
    await t.http().delete(`/contacts/${ada.id}`).set(acme.key).expect(200)
    expect((await t.http().get(`/contacts/${ada.id}`).set(acme.key)).status).toBe(404)
  })

  it('when a shape was read once, then later reads of it build no query; a $select is built for its call', async () => {
    const contact = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Linus' }).expect(201)).body
    await t.http().get(`/contacts/${contact.id}`).set(acme.key).expect(200)
    const builds = vi.spyOn(t.app.service('contacts') as any, 'createQuery')
    try {
      for (let i = 0; i < 3; i++) await t.http().get(`/contacts/${contact.id}`).set(acme.key).expect(200)
      expect(builds).not.toHaveBeenCalled()
      await t.http().get(`/contacts/${contact.id}`).set(acme.key).query({ $select: ['first_name'] }).expect(200)
      expect(builds).toHaveBeenCalledTimes(1)
    } finally {
      builds.mockRestore()
    }
  })
})
