import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

const LIMIT = 25
// A closed port on loopback: these tests write no event, so nothing is ever posted there.
const URL = 'http://127.0.0.1:9/hooks'

describe('the webhook subscriptions an organization may have', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startApp({ webhookAllowPrivate: true })
  })
  afterAll(async () => {
    await t?.close()
  })

  const subscribe = (tenant: Tenant) => t.http().post('/webhook-subscriptions').set(tenant.key).send({ url: URL, events: ['contacts.created'] })
  const live = async (tenant: Tenant) =>
    Number((await t.db('webhook_subscriptions').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').count({ n: '*' }))[0].n)

  async function subscribeUpTo(tenant: Tenant, count: number) {
    const ids: number[] = []
    for (let i = 0; i < count; i++) {
      const res = await subscribe(tenant)
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      ids.push(res.body.id)
    }
    return ids
  }

  it(`when an organization has ${LIMIT} live subscriptions, then another is refused with 400 saying so, inactive ones count, another organization is not affected, and deleting one makes room`, async () => {
    const [acme, globex] = await Promise.all([createTenant(t, 'Acme'), createTenant(t, 'Globex')])
    const ids = await subscribeUpTo(acme, LIMIT)
    expect((await t.http().patch(`/webhook-subscriptions/${ids[0]}`).set(acme.key).send({ is_active: false })).status).toBe(200)

    const refused = await subscribe(acme)
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
    expect(refused.body.message).toBe(`An organization may have at most ${LIMIT} webhook subscriptions; delete one it no longer needs before creating another`)
    expect(await live(acme)).toBe(LIMIT)
    expect((await subscribe(globex)).status).toBe(201)

    expect((await t.http().delete(`/webhook-subscriptions/${ids[1]}`).set(acme.key)).status).toBe(200)
    expect((await subscribe(acme)).status).toBe(201)
    expect(await live(acme)).toBe(LIMIT)
  })

  it('when several subscriptions are created at once with one place left, then exactly one is created and the others are refused with 400', async () => {
    const acme = await createTenant(t, 'Acme')
    await subscribeUpTo(acme, LIMIT - 1)
    const answers = await Promise.all(Array.from({ length: 5 }, () => subscribe(acme)))
    expect(answers.map((res) => res.status).sort()).toEqual([201, 400, 400, 400, 400])
    expect(await live(acme)).toBe(LIMIT)
  })
})
