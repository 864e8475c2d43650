import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { loadDefinitions, validateCustomFieldValues } from '../../src/hooks/custom-field-values.js'

describe('custom fields', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const define = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/custom-fields').set(tenant.key).send(body)

  describe('definitions (/custom-fields)', () => {
    it('when a definition is created, then it is returned with defaults and read back by id', async () => {
      const created = await define(acme, { entity_type: 'company', key: 'tier', name: 'Tier', field_type: 'select', options: ['gold', 'silver'] })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body).toMatchObject({
        organization_id: acme.organization.id, entity_type: 'company', key: 'tier', name: 'Tier',
        field_type: 'select', options: ['gold', 'silver'], required: false, position: 0, deleted_at: null
      })
      const read = await t.http().get(`/custom-fields/${created.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual(created.body)
    })

    it('when the key is not a slug, then 400 with errors.key', async () => {
      const res = await define(acme, { entity_type: 'contact', key: 'Has Space', name: 'Spaced', field_type: 'text' })
      expect(res.status).toBe(400)
      expect(res.body.errors.key).toBeTruthy()
    })

    it('when entity_type or field_type is unknown, then 400 naming the field', async () => {
      const res = await define(acme, { entity_type: 'ticket', key: 'x', name: 'X', field_type: 'colour' })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual(expect.arrayContaining(['entity_type', 'field_type']))
    })

    it('when a select field has no options, or a text field has options, then 400 with errors.options', async () => {
      const select = await define(acme, { entity_type: 'contact', key: 'stage', name: 'Stage', field_type: 'select' })
      expect(select.status).toBe(400)
      expect(select.body.errors.options).toMatch(/required/)
      const text = await define(acme, { entity_type: 'contact', key: 'note', name: 'Note', field_type: 'text', options: ['a'] })
      expect(text.status).toBe(400)
      expect(text.body.errors.options).toMatch(/only allowed/)
    })

    it('when the key or the name is taken among live definitions of the entity type, then 409 naming it; deleted ones free them', async () => {
      const first = await define(acme, { entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
      expect(first.status).toBe(201)
      const sameKey = await define(acme, { entity_type: 'contact', key: 'budget', name: 'Other budget', field_type: 'number' })
      expect(sameKey.status).toBe(409)
      expect(sameKey.body.errors).toEqual({ key: expect.any(String) })
      const sameName = await define(acme, { entity_type: 'contact', key: 'budget2', name: 'BUDGET', field_type: 'number' })
      expect(sameName.status).toBe(409)
      expect(sameName.body.errors).toEqual({ name: expect.any(String) })
      const otherEntity = await define(acme, { entity_type: 'deal', key: 'budget', name: 'Budget', field_type: 'number' })
      expect(otherEntity.status).toBe(201)
      const otherOrganization = await define(other, { entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
      expect(otherOrganization.status).toBe(201)

      const removed = await t.http().delete(`/custom-fields/${first.body.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toBeTruthy()
      expect(removed.body.updated_at).toBe(removed.body.deleted_at)
      expect((await t.http().get(`/custom-fields/${first.body.id}`).set(acme.key)).status).toBe(404)
      const again = await define(acme, { entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' })
      expect(again.status).toBe(201)
      await t.http().delete(`/custom-fields/${again.body.id}`).set(acme.key)
    })

    it('when a definition is renamed to a taken name, then 409; otherwise the change is read back', async () => {
      const a = await define(acme, { entity_type: 'deal', key: 'source', name: 'Source', field_type: 'text' })
      const b = await define(acme, { entity_type: 'deal', key: 'channel', name: 'Channel', field_type: 'text' })
      const clash = await t.http().patch(`/custom-fields/${b.body.id}`).set(acme.key).send({ name: 'source' })
      expect(clash.status).toBe(409)
      expect(clash.body.errors.name).toBeTruthy()
      const renamed = await t.http().patch(`/custom-fields/${a.body.id}`).set(acme.key).send({ name: 'Lead source', position: 3, required: true })
      expect(renamed.status).toBe(200)
      const read = await t.http().get(`/custom-fields/${a.body.id}`).set(acme.key)
      expect(read.body).toMatchObject({ name: 'Lead source', position: 3, required: true, key: 'source' })
    })

    it('when key, entity_type or field_type is patched, then 400: they are fixed at creation', async () => {
      const a = await define(acme, { entity_type: 'deal', key: 'fixed', name: 'Fixed', field_type: 'text' })
      const res = await t.http().patch(`/custom-fields/${a.body.id}`).set(acme.key).send({ key: 'moved', field_type: 'number', entity_type: 'company' })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual(expect.arrayContaining(['key', 'field_type', 'entity_type']))
    })

    it('when listing, then filters by entity_type, sorts by position, pages with $skip and caps $limit at 50', async () => {
      const tenant = await createTenant(t, 'Lister')
      for (const [i, key] of ['c', 'a', 'b'].entries()) {
        await define(tenant, { entity_type: 'reservation', key, name: key.toUpperCase(), field_type: 'text', position: [2, 0, 1][i] })
      }
      await define(tenant, { entity_type: 'company', key: 'z', name: 'Z', field_type: 'text' })
      const list = await t.http().get('/custom-fields').set(tenant.key).send({ query: { entity_type: 'reservation' } })
      expect(list.status).toBe(200)
      expect(list.body).toMatchObject({ total: 3, limit: 10, skip: 0 })
      expect(list.body.data.map((d: any) => d.key)).toEqual(['a', 'b', 'c'])
      const page = await t.http().get('/custom-fields?entity_type=reservation&$skip=1&$limit=1').set(tenant.key)
      expect(page.body).toMatchObject({ total: 3, limit: 1, skip: 1 })
      expect(page.body.data.map((d: any) => d.key)).toEqual(['b'])
      const capped = await t.http().get('/custom-fields').set(tenant.key).send({ query: { $limit: 500 } })
      expect(capped.body.limit).toBe(50)
    })

    it('when another organization is addressed, then 404 by id, 403 by organization_id', async () => {
      const mine = await define(acme, { entity_type: 'company', key: 'private', name: 'Private', field_type: 'text' })
      expect((await t.http().get(`/custom-fields/${mine.body.id}`).set(other.key)).status).toBe(404)
      const patch = await t.http().patch(`/custom-fields/${mine.body.id}`).set(other.key).send({ name: 'Stolen' })
      expect(patch.status).toBe(404)
      expect(patch.body.message).toBe(`No record found for id '${mine.body.id}'`)
      expect((await t.http().delete(`/custom-fields/${mine.body.id}`).set(other.key)).status).toBe(404)
      expect((await t.http().get(`/custom-fields/${mine.body.id}`).set(acme.key)).body.name).toBe('Private')
      const list = await t.http().get('/custom-fields').set(other.key).send({ query: { organization_id: acme.organization.id } })
      expect(list.status).toBe(403)
      const create = await define(other, { organization_id: acme.organization.id, entity_type: 'company', key: 'x', name: 'X', field_type: 'text' })
      expect(create.status).toBe(403)
    })
  })

  describe('values on companies (custom_fields_by_name)', () => {
    let tenant: Tenant
    beforeAll(async () => {
      tenant = await createTenant(t, 'Values')
      const fields = [
        { key: 'budget', name: 'Budget', field_type: 'number' },
        { key: 'tier', name: 'Tier', field_type: 'select', options: ['gold', 'silver'] },
        { key: 'tags', name: 'Tags', field_type: 'multiselect', options: ['a', 'b', 'c'] },
        { key: 'active', name: 'Active', field_type: 'boolean' },
        { key: 'since', name: 'Since', field_type: 'date' },
        { key: 'contact_email', name: 'Contact e-mail', field_type: 'email' },
        { key: 'homepage', name: 'Homepage', field_type: 'url' },
        { key: 'hotline', name: 'Hotline', field_type: 'phone' },
        { key: 'notes', name: 'Notes', field_type: 'text' }
      ]
      for (const field of fields) expect((await define(tenant, { entity_type: 'company', ...field })).status).toBe(201)
    })

    const createCompany = (values: Record<string, unknown>) =>
      t.http().post('/companies').set(tenant.key).send({ name: 'Initech', custom_fields_by_name: values })

    it('when values of every type are valid, then they round-trip by name and are stored by key', async () => {
      const values = {
        Budget: 1200.5, Tier: 'gold', Tags: ['a', 'c'], Active: true, Since: '2024-02-29',
        'Contact e-mail': 'buyer@initech.example', Homepage: 'https://initech.example', Hotline: '+1 (555) 010-0000', Notes: 'VIP'
      }
      const created = await createCompany(values)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body.custom_fields_by_name).toEqual(values)
      expect(created.body.custom_fields).toBeUndefined()
      const read = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(read.body.custom_fields_by_name).toEqual(values)
      const stored = await t.db('companies').where({ id: created.body.id }).first()
      expect(stored.custom_fields).toMatchObject({ budget: 1200.5, tier: 'gold', contact_email: 'buyer@initech.example' })
    })

    it('when a value has the wrong type, then 400 with errors naming each field', async () => {
      const res = await createCompany({
        Budget: '12', Active: 'yes', Since: '2023-02-30', 'Contact e-mail': 'nope', Homepage: 'ftp://x', Hotline: 'call me', Notes: 5
      })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors).sort()).toEqual([
        'custom_fields_by_name.Active', 'custom_fields_by_name.Budget', 'custom_fields_by_name.Contact e-mail',
        'custom_fields_by_name.Homepage', 'custom_fields_by_name.Hotline', 'custom_fields_by_name.Notes', 'custom_fields_by_name.Since'
      ])
      expect(res.body.errors['custom_fields_by_name.Budget']).toBe('must be a number')
    })

    it('when an option is not in the list, then 400 naming the field', async () => {
      const res = await createCompany({ Tier: 'bronze', Tags: ['a', 'z'] })
      expect(res.status).toBe(400)
      expect(res.body.errors['custom_fields_by_name.Tier']).toBe('must be one of: gold, silver')
      expect(res.body.errors['custom_fields_by_name.Tags']).toMatch(/among: a, b, c/)
    })

    it('when a name is unknown (or belongs to another entity type), then 400 naming it', async () => {
      await define(tenant, { entity_type: 'contact', key: 'birthday', name: 'Birthday', field_type: 'date' })
      const res = await createCompany({ Colour: 'red', Birthday: '2000-01-01' })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors).sort()).toEqual(['custom_fields_by_name.Birthday', 'custom_fields_by_name.Colour'])
    })

    it('when a patch sends some values, then they merge per name and null clears one', async () => {
      const created = await createCompany({ Budget: 10, Tier: 'silver', Notes: 'keep' })
      const patched = await t.http().patch(`/companies/${created.body.id}`).set(tenant.key).send({ custom_fields_by_name: { Budget: 20, Tier: null } })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      expect(patched.body.custom_fields_by_name).toEqual({ Budget: 20, Notes: 'keep' })
      const untouched = await t.http().patch(`/companies/${created.body.id}`).set(tenant.key).send({ industry: 'Software' })
      expect(untouched.body.custom_fields_by_name).toEqual({ Budget: 20, Notes: 'keep' })
      const bad = await t.http().patch(`/companies/${created.body.id}`).set(tenant.key).send({ custom_fields_by_name: { Budget: 'x' } })
      expect(bad.status).toBe(400)
      expect(bad.body.errors['custom_fields_by_name.Budget']).toBeTruthy()
      const read = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(read.body.custom_fields_by_name).toEqual({ Budget: 20, Notes: 'keep' })
    })

    it('when a field is renamed, then stored values appear under the new name; when deleted, they disappear', async () => {
      const field = await define(tenant, { entity_type: 'company', key: 'region', name: 'Region', field_type: 'text' })
      const created = await createCompany({ Region: 'EMEA' })
      await t.http().patch(`/custom-fields/${field.body.id}`).set(tenant.key).send({ name: 'Sales region' })
      const renamed = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(renamed.body.custom_fields_by_name).toEqual({ 'Sales region': 'EMEA' })
      await t.http().delete(`/custom-fields/${field.body.id}`).set(tenant.key)
      const hidden = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(hidden.body.custom_fields_by_name).toEqual({})
    })

    it('when a required field is missing on create or cleared on patch, then 400 naming it', async () => {
      const required = await t.http().post('/custom-fields').set(tenant.key).send({ entity_type: 'company', key: 'vat', name: 'VAT id', field_type: 'text', required: true })
      try {
        const missing = await t.http().post('/companies').set(tenant.key).send({ name: 'No VAT' })
        expect(missing.status).toBe(400)
        expect(missing.body.errors).toEqual({ 'custom_fields_by_name.VAT id': 'is required' })
        const ok = await createCompany({ 'VAT id': 'GB123' })
        expect(ok.status).toBe(201)
        const cleared = await t.http().patch(`/companies/${ok.body.id}`).set(tenant.key).send({ custom_fields_by_name: { 'VAT id': null } })
        expect(cleared.status).toBe(400)
        expect(cleared.body.errors).toEqual({ 'custom_fields_by_name.VAT id': 'is required' })
      } finally {
        await t.http().delete(`/custom-fields/${required.body.id}`).set(tenant.key)
      }
    })

    it('when values are addressed by key (the reservations mode), then keys validate and output by key', async () => {
      // No service of this test file answers by key; reservations do (their tests cover HTTP).
      const definitions = await loadDefinitions(t.db, [tenant.organization.id], 'company')
      expect(() => validateCustomFieldValues(definitions, { Budget: 1 }, { by: 'key', mode: 'patch' })).toThrow()
      const error = (() => {
        try {
          validateCustomFieldValues(definitions, { tier: 'bronze', nope: 1 }, { by: 'key', mode: 'patch' })
        } catch (thrown: any) {
          return thrown
        }
      })()
      expect(error?.code).toBe(400)
      expect(Object.keys(error.errors).sort()).toEqual(['custom_fields_by_key.nope', 'custom_fields_by_key.tier'])
      const changes = validateCustomFieldValues(definitions, { budget: 5, tier: null }, { by: 'key', mode: 'patch' })
      expect(changes).toEqual({ set: { budget: 5 }, cleared: ['tier'] })
    })

    it('when a page of companies is listed, then every company carries its custom values by name', async () => {
      for (let i = 0; i < 6; i++) await createCompany({ Budget: i, Tier: 'gold' })
      const page = await t.http().get('/companies').set(tenant.key).send({ query: { $limit: 8, $sort: { id: -1 } } })
      expect(page.body.data).toHaveLength(8)
      expect(page.body.data.every((c: any) => typeof c.custom_fields_by_name === 'object')).toBe(true)
      expect(page.body.data.slice(0, 6).map((c: any) => c.custom_fields_by_name)).toEqual([5, 4, 3, 2, 1, 0].map((Budget) => ({ Budget, Tier: 'gold' })))
    })
  })

  describe('reserved names and prototype keys', () => {
    const rawJson = (tenant: Tenant, path: string, json: string) =>
      t.http().post(path).set(tenant.key).set('Content-Type', 'application/json').send(json)

    it.each(['__proto__', 'constructor', 'prototype'])('when a definition is named or keyed %s, then 400 naming the field and nothing is stored', async (word) => {
      const byName = await define(acme, { entity_type: 'contact', key: 'safe_key', name: word, field_type: 'text' })
      expect(byName.status).toBe(400)
      expect(byName.body).toMatchObject({ name: 'BadRequest', errors: { name: 'is a reserved word' } })
      if (/^[a-z]/.test(word)) {
        const byKey = await define(acme, { entity_type: 'contact', key: word, name: 'Safe name', field_type: 'text' })
        expect(byKey.status).toBe(400)
        expect(byKey.body).toMatchObject({ name: 'BadRequest', errors: { key: 'is a reserved word' } })
      }
      const stored = await t.http().get('/custom-fields').set(acme.key).query({ entity_type: 'contact' })
      expect(stored.body.data.map((d: any) => d.name)).not.toContain(word)
      expect(stored.body.data.map((d: any) => d.key)).not.toContain(word)
    })

    it('when an existing definition is renamed to __proto__, then 400 and the name is unchanged', async () => {
      const created = await define(acme, { entity_type: 'deal', key: 'rename_me', name: 'Rename me', field_type: 'text' })
      const renamed = await t.http().patch(`/custom-fields/${created.body.id}`).set(acme.key).send({ name: ' __proto__ ' })
      expect(renamed.status).toBe(400)
      expect(renamed.body.errors).toEqual({ name: 'is a reserved word' })
      expect((await t.http().get(`/custom-fields/${created.body.id}`).set(acme.key)).body.name).toBe('Rename me')
    })

    it('when a body sends custom_fields_by_name {"__proto__": ...} as raw JSON, then 400 naming the key rule, nothing is stored and no prototype is polluted', async () => {
      const res = await rawJson(acme, '/companies', '{"name":"Proto Inc","custom_fields_by_name":{"__proto__":{"polluted":true}}}')
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ name: 'BadRequest', code: 400, className: 'bad-request', message: 'Invalid request body: a "__proto__" or "constructor.prototype" key is not allowed' })
      expect(({} as any).polluted).toBeUndefined()
      const list = await t.http().get('/companies').set(acme.key).query({ name: 'Proto Inc' })
      expect(list.body.total).toBe(0)
    })

    it('when a body sends custom_fields_by_name {"constructor": ..., "toString": ...}, then 400 naming each as an unknown field and nothing is stored', async () => {
      const res = await rawJson(acme, '/companies', '{"name":"Ctor Inc","custom_fields_by_name":{"constructor":"x","toString":"y","hasOwnProperty":"z"}}')
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({
        'custom_fields_by_name.constructor': 'is not a custom field name of this organization',
        'custom_fields_by_name.toString': 'is not a custom field name of this organization',
        'custom_fields_by_name.hasOwnProperty': 'is not a custom field name of this organization'
      })
      const list = await t.http().get('/companies').set(acme.key).query({ name: 'Ctor Inc' })
      expect(list.body.total).toBe(0)
    })

    it('when a definition named __proto__ exists from before the check, then its stored value reads back as a plain field', async () => {
      const tenant = await createTenant(t, 'Legacy')
      await t.db('custom_fields').insert({ organization_id: tenant.organization.id, entity_type: 'company', key: 'legacy', name: '__proto__', field_type: 'text' })
      const created = await t.http().post('/companies').set(tenant.key).send({ name: 'Legacy Ltd' })
      await t.db('companies').where({ organization_id: tenant.organization.id, id: created.body.id }).update({ custom_fields: JSON.stringify({ legacy: 'kept' }) })
      const read = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(read.status).toBe(200)
      // The raw text, not a parsed body: the key must be sent as an own member (Postgres's JSON of a wire read may space it).
      expect(read.text).toMatch(/"custom_fields_by_name":\{\s*"__proto__"\s*:\s*"kept"\s*\}/)
      expect(JSON.parse(read.text).custom_fields_by_name).toEqual(JSON.parse('{"__proto__":"kept"}'))
      const crossTenant = await t.http().get(`/companies/${created.body.id}`).set(other.key)
      expect(crossTenant.status).toBe(404)
    })

    it('when a definition keyed constructor exists from before the check and no value is set, then the output has no such field', async () => {
      const tenant = await createTenant(t, 'Legacy2')
      await t.db('custom_fields').insert({ organization_id: tenant.organization.id, entity_type: 'company', key: 'constructor', name: 'Builder', field_type: 'text' })
      await t.db('custom_fields').insert({ organization_id: tenant.organization.id, entity_type: 'company', key: 'size_note', name: 'Size note', field_type: 'text' })
      const created = await t.http().post('/companies').set(tenant.key).send({ name: 'Builder Co', custom_fields_by_name: { 'Size note': 'big' } })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const read = await t.http().get(`/companies/${created.body.id}`).set(tenant.key)
      expect(read.body.custom_fields_by_name).toEqual({ 'Size note': 'big' })
      expect(created.body.custom_fields_by_name).toEqual({ 'Size note': 'big' })
    })
  })
})
