import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { enqueueDuePurges } from '../../src/services/crm/privacy/retention.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { settlePurges } from './fixtures.js'

const DELETED = 100_000
const LONGEST_WRITE_MS = 1000
/** The organization's users write steadily meanwhile: a create or a change this often. */
const WRITE_EVERY_MS = 100

describe('the retention purge of a large organization', () => {
  let t: TestApp
  let acme: Tenant

  beforeAll(async () => {
    // Every write counts: the API-key limit would refuse some within the hour.
    t = await startApp({ rateLimitEnabled: false })
    acme = await createTenant(t, 'Acme')
    await t.db.raw(
      `INSERT INTO contacts (organization_id, first_name, email, system_type, deleted_at, updated_at)
       SELECT ?, 'Deleted ' || g, 'deleted-' || g || '@example.test', 'contact', now() - interval '40 days', now() - interval '40 days'
         FROM generate_series(1, ?) AS g`,
      [acme.organization.id, DELETED]
    )
  }, 300_000)
  afterAll(async () => {
    await t.close()
  })

  it(`when ${DELETED.toLocaleString('en')} deleted contacts are purged, then every write of the organization meanwhile (one every ${WRITE_EVERY_MS} ms) answers within ${LONGEST_WRITE_MS} ms, and they are all gone`, async () => {
    const deletedLeft = async () => Number((await t.db('contacts').where({ organization_id: acme.organization.id }).whereNotNull('deleted_at').count({ n: '*' }).first())!.n)
    const living = (await t.http().post('/contacts').set(acme.key).send({ first_name: 'Living' })).body
    let purging = true
    const purge = (async () => {
      await enqueueDuePurges(t.db)
      await settlePurges(t, acme.organization.id)
    })().finally(() => {
      purging = false
    })
    const latencies: number[] = []
    for (let n = 0; purging; n++) {
      const started = performance.now()
      const write = n % 2 === 0
        ? await t.http().post('/contacts').set(acme.key).send({ first_name: `Written ${n}` })
        : await t.http().patch(`/contacts/${living.id}`).set(acme.key).send({ last_name: `Changed ${n}` })
      latencies.push(performance.now() - started)
      expect(write.status).toBeLessThan(300)
      await sleep(WRITE_EVERY_MS)
    }
    await purge
    expect(await deletedLeft()).toBe(0)
    expect(latencies.length).toBeGreaterThan(10)
    expect(Math.max(...latencies), `${latencies.length} writes`).toBeLessThan(LONGEST_WRITE_MS)
  }, 300_000)
})
