import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { countQueries, startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { isEmbedded } from '../../src/db.js'

// The first check of which relation tables carry change marks fails (the database away for a moment).
const failures = vi.hoisted(() => ({ left: 1 }))
vi.mock('../../src/services/joins.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/services/joins.js')>()
  return {
    ...actual,
    markedTables: async (...args: Parameters<typeof actual.markedTables>) => {
      if (failures.left-- > 0) throw new Error('connection lost')
      return actual.markedTables(...args)
    }
  }
})

/** A wire page's statements are built once per list from the schema; a failed read of it is not kept. */
describe.skipIf(!process.env.DATABASE_URL)('change marks, when reading the triggers fails', () => {
  let t: TestApp
  let tenant: Tenant

  beforeAll(async () => {
    t = await startApp()
    tenant = await createTenant(t, 'Retry')
  })
  afterAll(async () => t?.close())

  it('reads them again on the next page, which is then answered with its mark', async () => {
    expect(isEmbedded(t.db)).toBe(false)
    const page = () => t.http().get('/deals').set(tenant.key).send({ query: { fastJoinForDealsList: true } })
    expect((await page()).status).toBe(500)
    expect(failures.left).toBe(0)
    const { result, sql } = await countQueries(t.db, page)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(sql.some((text) => text.includes('FROM pg_trigger'))).toBe(true)
    expect(sql.some((text) => text.includes('AS crm_mark'))).toBe(true)
  })
})
