import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Knex } from 'knex'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { marksCover, relationsMark, tablesMarked } from '../../src/services/joins.js'
import type { JoinSpec } from '../../src/services/joins.js'
import { LIST_JOINS as ACTIVITY_LIST } from '../../src/services/activities/activities.class.js'
import { CREATOR_AND_OWNER } from '../../src/services/companies/companies.js'
import { COMPANY_AND_OWNER } from '../../src/services/contacts/contacts.class.js'
import { LIST_JOINS as DEAL_LIST } from '../../src/services/deals/deals.class.js'
import { USER_JOIN } from '../../src/services/organizations-users/organizations-users.class.js'
import { RELATIONS as RESERVATION_LIST } from '../../src/services/reservations/reservations.class.js'

/**
 * Change marks (migration 20261126000200): the count of committed writes to a table's rows of an
 * organization, which a wire page reads instead of probing each related row (record-texts.ts).
 * What the pages make of a mark is tested in wire-pages.test.ts.
 */
describe('change marks', () => {
  let t: TestApp
  let tenant: Tenant
  let other: Tenant

  const markOf = async (db: Knex, specs: JoinSpec[], organizationId: number) =>
    (await db.raw(`SELECT ${relationsMark(specs, String(organizationId))} AS mark`)).rows[0].mark as string
  const companies: JoinSpec[] = [{ from: 'company_id', as: 'company', table: 'companies', columns: ['id', 'name'] }]
  const users: JoinSpec[] = [{ from: 'owned_by_user_id', as: 'owner', table: 'users', columns: ['id'], tenant: false }]

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Marks')
    other = await createTenant(t, 'Other marks')
  })
  afterAll(async () => t?.close())

  it('covers the tables of every list relation a page reads in its own statement', async () => {
    const lists: [string, JoinSpec[]][] = [
      ['activities', ACTIVITY_LIST], ['companies', CREATOR_AND_OWNER], ['contacts', COMPANY_AND_OWNER], ['deals', DEAL_LIST as JoinSpec[]],
      ['organizations-users', USER_JOIN], ['reservations', RESERVATION_LIST]
    ]
    for (const [name, specs] of lists) expect(await marksCover(t.db, specs), name).toBe(true)
    // A table without the triggers is not covered: its relations keep their versions per row.
    expect(await marksCover(t.db, [...DEAL_LIST as JoinSpec[], { from: 'product_id', as: 'product', table: 'products', columns: ['id'] }])).toBe(false)
  })

  it('covers the tables whole pages read: the lists\' own tables and the custom-field definitions (record-pages.ts)', async () => {
    expect(await tablesMarked(t.db, { tenant: ['activities', 'companies', 'contacts', 'deals', 'custom_fields'], global: ['users'] })).toBe(true)
    // A table without the triggers keeps its pages unkept: products are not marked.
    expect(await tablesMarked(t.db, { tenant: ['products'], global: [] })).toBe(false)
    // Users count under organization 0, not as a tenant table.
    expect(await tablesMarked(t.db, { tenant: ['users'], global: [] })).toBe(false)
  })

  it("moves with every write of the organization's rows, and only of its own", async () => {
    const write = (method: 'post' | 'patch' | 'delete', path: string, body?: Record<string, unknown>, as = tenant) =>
      t.http()[method](path).set(as.key).send(body)
    let before = await markOf(t.db, companies, tenant.organization.id)
    const theirs = await markOf(t.db, companies, other.organization.id)
    const created = await write('post', '/companies', { name: 'Marked' })
    expect(created.status).toBe(201)
    for (const step of [
      () => write('patch', `/companies/${created.body.id}`, { name: 'Marked again' }),
      () => write('delete', `/companies/${created.body.id}`),
      () => t.db('companies').where({ id: created.body.id }).delete()
    ]) {
      const now = await markOf(t.db, companies, tenant.organization.id)
      expect(now).not.toBe(before)
      before = now
      await step()
    }
    expect(await markOf(t.db, companies, tenant.organization.id)).not.toBe(before)
    expect(await markOf(t.db, companies, other.organization.id)).toBe(theirs)
  })

  it('does not move for a write that is rolled back, nor for a statement that changed no row', async () => {
    const before = await markOf(t.db, companies, tenant.organization.id)
    await t.db.transaction(async (trx) => {
      await trx('companies').insert({ organization_id: tenant.organization.id, name: 'Never' })
      await trx.rollback()
    }).catch(() => undefined)
    await t.db('companies').where({ organization_id: tenant.organization.id, name: 'No such company' }).update({ name: 'x' })
    expect(await markOf(t.db, companies, tenant.organization.id)).toBe(before)
  })

  it("counts a user's writes under every organization (users are global)", async () => {
    const ours = await markOf(t.db, users, tenant.organization.id)
    const theirs = await markOf(t.db, users, other.organization.id)
    await t.db('users').where({ id: other.user.id }).update({ first_name: 'Marked' })
    expect(await markOf(t.db, users, tenant.organization.id)).not.toBe(ours)
    expect(await markOf(t.db, users, other.organization.id)).not.toBe(theirs)
  })

  it("moves for a TRUNCATE, for every organization", async () => {
    await t.db.transaction(async (trx) => {
      await trx.raw('CREATE TEMP TABLE marks_scratch (id integer, organization_id integer) ON COMMIT DROP')
      await trx.raw('CREATE TRIGGER marks_scratch_marks_truncated AFTER TRUNCATE ON marks_scratch FOR EACH STATEMENT EXECUTE FUNCTION change_marks_tenant_truncated()')
      const scratch: JoinSpec[] = [{ from: 'id', as: 'scratch', table: 'marks_scratch', columns: ['id'] }]
      const before = [await markOf(trx, scratch, tenant.organization.id), await markOf(trx, scratch, other.organization.id)]
      await trx.raw('TRUNCATE marks_scratch')
      const after = [await markOf(trx, scratch, tenant.organization.id), await markOf(trx, scratch, other.organization.id)]
      expect(after[0]).not.toBe(before[0])
      expect(after[1]).not.toBe(before[1])
      await trx.rollback()
    }).catch((error) => {
      if (error) throw error
    })
  })

  // Embedded Postgres has one connection: no reader beside an open writer.
  it.runIf(Boolean(process.env.DATABASE_URL))('moves for a reader only when the write commits', async () => {
    const before = await markOf(t.db, companies, tenant.organization.id)
    const trx = await t.db.transaction()
    try {
      await trx('companies').insert({ organization_id: tenant.organization.id, name: 'Committed later' })
      expect(await markOf(t.db, companies, tenant.organization.id)).toBe(before)
      await trx.commit()
    } catch (error) {
      await trx.rollback()
      throw error
    }
    expect(await markOf(t.db, companies, tenant.organization.id)).not.toBe(before)
  })
})
