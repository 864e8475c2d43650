import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

/** Every JSON answer is written alike: compact, as JSON.stringify writes it, whoever wrote it (Postgres or node). */
describe('the bytes of JSON answers', () => {
  let t: TestApp
  let acme: Tenant
  let contactId: number

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'tier', name: 'Tier', field_type: 'select', options: ['gold', 'silver'] })
    await t.http().post('/custom-fields').set(acme.key).send({ entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
    const company = (await t.http().post('/companies').set(acme.key).send({ name: 'Initech' })).body
    const created = await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ada', last_name: 'Lovelace', company_id: company.id, custom_fields_by_name: { Tier: 'gold', Budget: 12.5 } })
    contactId = created.body.id
    await t.http().post('/contacts').set(acme.key).send({ first_name: 'Adam', last_name: 'Smith' })
  })
  afterAll(async () => { await t.close() })

  const compact = (text: string) => JSON.stringify(JSON.parse(text))

  it('when a record, a list, a joined list, a keyset page, a search and a write are answered, then each is written as JSON.stringify writes it', async () => {
    const answers = [
      await t.http().get(`/contacts/${contactId}`).set(acme.key),
      await t.http().get('/contacts').set(acme.key),
      await t.http().get('/contacts').set(acme.key).send({ query: { fastJoinForContactList: true } }),
      await t.http().get('/contacts').set(acme.key).send({ query: { $after: { updated_at: '2000-01-01T00:00:00.000Z', id: 0 } } }),
      await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'search').send({ searchIn: 'name', searchTerm: 'ada' }),
      await t.http().patch(`/contacts/${contactId}`).set(acme.key).send({ custom_fields_by_name: { Budget: 13 } })
    ]
    for (const answer of answers) {
      expect(answer.status, answer.text).toBeLessThan(300)
      expect(answer.text).toBe(compact(answer.text))
    }
  })
})
