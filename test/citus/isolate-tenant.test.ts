import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

// Runs on a Citus coordinator only (npm run test:citus, vitest.citus.config.ts): an operator gives
// a large organization shards of its own while the service serves it and the others.
describe('isolating a tenant on Citus', () => {
  let t: TestApp
  let big: Tenant
  let small: Tenant

  beforeAll(async () => {
    t = await startApp()
    big = await createTenant(t, 'Big')
    small = await createTenant(t, 'Small')
  })
  afterAll(async () => {
    await t.close()
  })

  /** The shard of contacts holding an organization, and how many hash values it covers. */
  const shardOf = async (organization: number) => {
    const { rows } = await t.app.get('backgroundKnex').raw(
      `SELECT s.shardid, s.shardmaxvalue::bigint - s.shardminvalue::bigint AS width
         FROM pg_dist_shard s WHERE s.shardid = get_shard_id_for_distribution_column('contacts', ?::int)`,
      [organization]
    )
    return rows[0] as { shardid: number; width: number }
  }

  it('when the organization is isolated while requests run, then reads are served, and a write racing the switch is a 503 or 409 that its Idempotency-Key makes safe to send again, and after it its rows sit alone in their shard', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await t.http().post('/contacts').set(big.key).send({ first_name: `Before ${i}` })).status).toBe(201)
    }
    expect((await shardOf(big.organization.id)).width).toBeGreaterThan(0)

    // Requests of both organizations keep coming while the shards are split (writes of the isolated
    // organization wait for the copy: block_writes). Each write carries an Idempotency-Key.
    let stop = false
    const reads: number[] = []
    const writes: { tenant: typeof big; key: string; name: string; status: number; body: unknown }[] = []
    const traffic = (async () => {
      for (let i = 0; !stop; i++) {
        const tenant = i % 2 === 0 ? big : small
        const key = `isolate-${i}`
        const name = `During ${i}`
        const res = await t.http().post('/contacts').set(tenant.key).set('Idempotency-Key', key).send({ first_name: name })
        writes.push({ tenant, key, name, status: res.status, body: res.body })
        reads.push((await t.http().get('/contacts').set(tenant.key)).status)
      }
    })()
    try {
      await t.app.get('backgroundKnex').raw(`SELECT isolate_tenant_to_new_shard('contacts', ?::int, 'CASCADE', shard_transfer_mode => 'block_writes')`, [big.organization.id])
    } finally {
      stop = true
      await traffic
    }
    // Reads were all served: one that meets the old shard just as the split replaces it ("could
    // not find valid entry for shard") is made again. A write can meet the split too: as a 503 (the
    // shard was replaced under it) or a 409 "retry it" (a deadlock with the split's locks, which hold
    // every organization of the shard being split). Both tell the client to send it again, and sent
    // again with its Idempotency-Key it is stored once (docs/scaling.md).
    expect(reads.length).toBeGreaterThan(0)
    expect(reads.every((status) => status === 200)).toBe(true)
    const refused = writes.filter((write) => write.status !== 201)
    const described = JSON.stringify(refused.map(({ key, status, body }) => ({ key, status, body })))
    expect(refused.length, described).toBeLessThanOrEqual(3)
    for (const write of refused) {
      expect([409, 503], described).toContain(write.status)
      expect((write.body as { message: string }).message, described).toMatch(/send the request again|retry it/)
      const again = await t.http().post('/contacts').set(write.tenant.key).set('Idempotency-Key', write.key).send({ first_name: write.name })
      expect(again.status).toBe(201)
      const found = await t.http().get('/contacts').set(write.tenant.key).send({ query: { first_name: write.name } })
      expect(found.body.total).toBe(1)
    }

    // The organization's shard covers its one hash value; the other organization is untouched.
    expect((await shardOf(big.organization.id)).width).toBe(0)
    expect((await shardOf(small.organization.id)).width).toBeGreaterThan(0)

    // After: the isolated organization reads, counts and writes as before.
    const created = await t.http().post('/contacts').set(big.key).send({ first_name: 'After' })
    expect(created.status).toBe(201)
    const list = await t.http().get('/contacts').set(big.key).send({ query: { $limit: 100 } })
    expect(list.status).toBe(200)
    expect(list.body.total).toBe(list.body.data.length)
    expect(list.body.data.map((contact: { first_name: string }) => contact.first_name)).toEqual(expect.arrayContaining(['Before 0', 'After']))
    expect((await t.http().patch(`/contacts/${created.body.id}`).set(big.key).send({ last_name: 'Isolated' })).status).toBe(200)
    expect((await t.http().get(`/contacts/${created.body.id}`).set(small.key)).status).toBe(404)
  })
})
