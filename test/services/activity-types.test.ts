import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

const ICON_KEYS = ['phone', 'calendar', 'users', 'check-square', 'map-pin', 'clipboard', 'coffee', 'message-circle', 'video', 'file-text', 'award']

describe('activity types', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const createType = async (tenant: Tenant, body: Record<string, unknown>) => {
    const response = await t.http().post('/activity-types').set(tenant.key).send(body)
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body
  }

  it('when a type is created with an API key, then it belongs to the key\'s organization and reads back', async () => {
    const created = await createType(acme, { name: 'Site visit', color: '#1A2b3C', icon_key: 'map-pin' })
    expect(created).toMatchObject({
      name: 'Site visit', color: '#1A2b3C', icon_key: 'map-pin', organization_id: acme.organization.id, deleted_at: null
    })
    expect(created.id).toEqual(expect.any(Number))
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const read = await t.http().get(`/activity-types/${created.id}`).set(acme.key)
    expect(read.status).toBe(200)
    expect(read.body).toEqual({ ...created, activities_count: 0 })
  })

  it('when the name is missing or blank, then 400 with errors.name', async () => {
    for (const body of [{ color: '#000000' }, { name: '' }, { name: '   ' }]) {
      const response = await t.http().post('/activity-types').set(acme.key).send(body)
      expect(response.status).toBe(400)
      expect(response.body.errors.name).toEqual(expect.any(String))
    }
  })

  it('when the color is not #RRGGBB, then 400 with errors.color', async () => {
    for (const color of ['red', '#12345', '#1234567', '#GGGGGG', '123456', 7]) {
      const response = await t.http().post('/activity-types').set(acme.key).send({ name: `Colour ${color}`, color })
      expect(response.status, String(color)).toBe(400)
      expect(response.body).toMatchObject({ name: 'BadRequest', className: 'bad-request', code: 400 })
      expect(response.body.errors.color).toEqual(expect.any(String))
    }
  })

  it('when the icon_key is not in the list, then 400 with errors.icon_key; every listed key is accepted', async () => {
    const bad = await t.http().post('/activity-types').set(acme.key).send({ name: 'Rocket', icon_key: 'rocket' })
    expect(bad.status).toBe(400)
    expect(bad.body.errors.icon_key).toEqual(expect.any(String))
    for (const icon_key of ICON_KEYS) {
      const created = await createType(acme, { name: `Icon ${icon_key}`, icon_key, color: '#ffffff' })
      expect(created.icon_key).toBe(icon_key)
    }
  })

  it('when a field the service sets is sent, then 400 with the field named', async () => {
    const response = await t.http().post('/activity-types').set(acme.key).send({ name: 'Sneaky', id: 5, created_at: '2020-01-01T00:00:00.000Z' })
    expect(response.status).toBe(400)
    expect(response.body.errors).toMatchObject({ id: 'is not allowed', created_at: 'is not allowed' })
  })

  it('when a live type already has the name (any case), then 409 with errors.name; once deleted, the name is free again', async () => {
    const tenant = await createTenant(t, 'Unique')
    const first = await createType(tenant, { name: 'Demo', color: '#00aa00', icon_key: 'video' })
    for (const name of ['DEMO', '  demo ']) {
      const duplicate = await t.http().post('/activity-types').set(tenant.key).send({ name })
      expect(duplicate.status).toBe(409)
      expect(duplicate.body.errors).toEqual({ name: 'is already taken' })
    }
    const trimmed = await createType(tenant, { name: '  Call-back  ' })
    expect(trimmed.name).toBe('Call-back')
    const second = await createType(tenant, { name: 'Workshop' })
    const renameClash = await t.http().patch(`/activity-types/${second.id}`).set(tenant.key).send({ name: 'demo' })
    expect(renameClash.status).toBe(409)
    expect(renameClash.body.errors).toEqual({ name: 'is already taken' })

    const removed = await t.http().delete(`/activity-types/${first.id}`).set(tenant.key)
    expect(removed.status).toBe(200)
    const again = await createType(tenant, { name: 'Demo' })
    expect(again.id).not.toBe(first.id)
    // Another organization may use the same name.
    await createType(other, { name: 'Demo' })
  })

  it('when a custom type is named like a built-in type, then 400 with errors.name', async () => {
    for (const name of ['call', 'Meeting', 'TASK']) {
      const response = await t.http().post('/activity-types').set(acme.key).send({ name })
      expect(response.status).toBe(400)
      expect(response.body.errors.name).toMatch(/built-in/)
    }
    const type = await createType(acme, { name: 'Renamable' })
    const rename = await t.http().patch(`/activity-types/${type.id}`).set(acme.key).send({ name: 'lunch' })
    expect(rename.status).toBe(400)
    expect(rename.body.errors.name).toMatch(/built-in/)
  })

  it('when listing, then name is a case-insensitive partial match, $limit defaults to 10 and $sort orders', async () => {
    const tenant = await createTenant(t, 'Lister')
    for (let i = 1; i <= 12; i++) await createType(tenant, { name: `Type ${String(i).padStart(2, '0')}` })
    await createType(tenant, { name: 'Client Dinner' })
    await createType(tenant, { name: 'dinner_party' })

    const page = await t.http().get('/activity-types').set(tenant.key)
    expect(page.status).toBe(200)
    expect(page.body).toMatchObject({ total: 14, limit: 10, skip: 0 })
    expect(page.body.data).toHaveLength(10)
    expect(page.body.data[0]).not.toHaveProperty('activities_count')

    const dinner = await t.http().get('/activity-types').set(tenant.key).send({ query: { name: 'DINN', $sort: { name: 1 } } })
    expect(dinner.status).toBe(200)
    expect(dinner.body.data.map((row: any) => row.name)).toEqual(['Client Dinner', 'dinner_party'])

    // Wildcards in the term are literal characters.
    const underscore = await t.http().get('/activity-types').query({ name: 'r_p' }).set(tenant.key)
    expect(underscore.body.data.map((row: any) => row.name)).toEqual(['dinner_party'])

    const sorted = await t.http().get('/activity-types').set(tenant.key).send({ query: { name: 'type', $sort: { name: -1 }, $limit: 3, $skip: 2 } })
    expect(sorted.body.data.map((row: any) => row.name)).toEqual(['Type 10', 'Type 09', 'Type 08'])

    const unknown = await t.http().get('/activity-types').set(tenant.key).send({ query: { colour: '#000000' } })
    expect(unknown.status).toBe(400)
  })

  it('when activities use a type, then GET /:id counts only its live activities of the organization', async () => {
    const tenant = await createTenant(t, 'Counter')
    const demo = await createType(tenant, { name: 'Demo', color: '#ff8800', icon_key: 'video' })
    const training = await createType(tenant, { name: 'Training' })
    const ids: number[] = []
    for (const activity_type of ['Demo', 'demo', 'Demo', 'Training', 'call']) {
      const created = await t.http().post('/activities').set(tenant.key).send({ subject: 'x', activity_type })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      ids.push(created.body.id)
    }
    await t.http().delete(`/activities/${ids[2]}`).set(tenant.key).expect(200)

    const read = await t.http().get(`/activity-types/${demo.id}`).set(tenant.key)
    expect(read.body.activities_count).toBe(2)
    const readTraining = await t.http().get(`/activity-types/${training.id}`).set(tenant.key)
    expect(readTraining.body.activities_count).toBe(1)
  })

  it('when a type is patched, then name, color and icon_key change and its activities follow the rename', async () => {
    const tenant = await createTenant(t, 'Patcher')
    const type = await createType(tenant, { name: 'Demo', color: '#000000', icon_key: 'video' })
    const activity = await t.http().post('/activities').set(tenant.key).send({ subject: 'Show the product', activity_type: 'Demo' })
    expect(activity.status).toBe(201)

    const patched = await t.http().patch(`/activity-types/${type.id}`).set(tenant.key)
      .send({ name: 'Product demo', color: '#ABCDEF', icon_key: 'award' })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: type.id, name: 'Product demo', color: '#ABCDEF', icon_key: 'award' })
    expect(new Date(patched.body.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(type.updated_at).getTime())

    const read = await t.http().get(`/activity-types/${type.id}`).set(tenant.key)
    expect(read.body).toMatchObject({ name: 'Product demo', color: '#ABCDEF', icon_key: 'award', activities_count: 1 })
    const activityRead = await t.http().get(`/activities/${activity.body.id}`).set(tenant.key)
    expect(activityRead.body.activity_type).toBe('Product demo')
    const byType = await t.http().get('/activities').set(tenant.key).send({ query: { activity_type: 'Product demo' } })
    expect(byType.body.data.map((row: any) => row.id)).toEqual([activity.body.id])

    for (const body of [{ color: 'blue' }, { icon_key: 'star' }, { organization_id: other.organization.id }, {}]) {
      const bad = await t.http().patch(`/activity-types/${type.id}`).set(tenant.key).send(body)
      expect(bad.status, JSON.stringify(body)).toBe(400)
    }
    const unchanged = await t.http().get(`/activity-types/${type.id}`).set(tenant.key)
    expect(unchanged.body).toMatchObject({ name: 'Product demo', color: '#ABCDEF', icon_key: 'award', organization_id: tenant.organization.id })
  })

  it('when a type is deleted, then it is returned with deleted_at = updated_at and disappears from reads', async () => {
    const type = await createType(acme, { name: 'Ephemeral' })
    const removed = await t.http().delete(`/activity-types/${type.id}`).set(acme.key)
    expect(removed.status).toBe(200)
    expect(removed.body.deleted_at).toEqual(expect.any(String))
    expect(removed.body.updated_at).toBe(removed.body.deleted_at)
    const read = await t.http().get(`/activity-types/${type.id}`).set(acme.key)
    expect(read.status).toBe(404)
    const list = await t.http().get('/activity-types').set(acme.key).send({ query: { name: 'Ephemeral' } })
    expect(list.body.total).toBe(0)
    const again = await t.http().delete(`/activity-types/${type.id}`).set(acme.key)
    expect(again.status).toBe(404)
  })

  describe('across organizations', () => {
    it('when another organization\'s type is read, changed or deleted by id, then 404', async () => {
      const theirs = await createType(other, { name: 'Their type', color: '#111111' })
      for (const request of [
        t.http().get(`/activity-types/${theirs.id}`).set(acme.key),
        t.http().patch(`/activity-types/${theirs.id}`).set(acme.key).send({ color: '#222222' }),
        t.http().delete(`/activity-types/${theirs.id}`).set(acme.key)
      ]) {
        const response = await request
        expect(response.status).toBe(404)
        expect(response.body).toMatchObject({ name: 'NotFound', message: `No record found for id '${theirs.id}'` })
      }
      const still = await t.http().get(`/activity-types/${theirs.id}`).set(other.key)
      expect(still.body).toMatchObject({ color: '#111111', deleted_at: null })
    })

    it('when another organization_id is listed or written, then 403', async () => {
      const list = await t.http().get('/activity-types').set(acme.key).send({ query: { organization_id: other.organization.id } })
      expect(list.status).toBe(403)
      expect(list.body).toMatchObject({ name: 'Forbidden', className: 'forbidden' })
      const create = await t.http().post('/activity-types').set(acme.key).send({ organization_id: other.organization.id, name: 'Intruder' })
      expect(create.status).toBe(403)
      const theirs = await t.http().get('/activity-types').set(other.key).send({ query: { name: 'Intruder' } })
      expect(theirs.body.total).toBe(0)
    })

    it('when an activity names a custom type of another organization, then 400 with errors.activity_type', async () => {
      await createType(other, { name: 'Only theirs' })
      const response = await t.http().post('/activities').set(acme.key).send({ subject: 'x', activity_type: 'Only theirs' })
      expect(response.status).toBe(400)
      expect(response.body.errors.activity_type).toEqual(expect.any(String))
    })

    it('when no credentials are sent, then 401', async () => {
      const response = await t.http().get('/activity-types')
      expect(response.status).toBe(401)
      expect(response.body).toMatchObject({ name: 'NotAuthenticated', message: 'Invalid API key' })
    })
  })
})
