import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { activityCalls, seedContact, seedDeal } from './activity-fixtures.js'


describe('activities', () => {
  let t: TestApp
  let acme: Tenant
  let other: Tenant

  beforeAll(async () => {
    t = await startApp()
    acme = await createTenant(t, 'Acme')
    other = await createTenant(t, 'Other')
  })
  afterAll(async () => { await t.close() })

  const { post, createActivity, createCompany } = activityCalls(() => t)

  describe('create and read', () => {
    it('when only a subject is sent, then the defaults are set and the record reads back', async () => {
      const created = await createActivity(acme, { subject: 'Call back' })
      expect(created).toMatchObject({
        organization_id: acme.organization.id,
        created_by_user_id: acme.user.id,
        assigned_to_user_id: null,
        subject: 'Call back',
        note: null,
        location: null,
        location_geocoded: null,
        start_date: null,
        start_time: null,
        deal_id: null,
        contact_id: null,
        company_id: null,
        activity_type: 'task',
        activity_type_id: null,
        done: false,
        deleted_at: null
      })
      expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      const read = await t.http().get(`/activities/${created.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toMatchObject({ ...created, created_by_user: expect.any(Object), deal: null, contact: null, company: null })
    })

    it('when every field is sent, then dates stay YYYY-MM-DD, HH:MM is stored as HH:MM:00 and references are kept', async () => {
      const member = await addMember(t, acme)
      const company = await createCompany(acme)
      const { deal } = await seedDeal(t, acme.organization.id)
      const contact = await seedContact(t, acme.organization.id)
      const body = {
        assigned_to_user_id: member.user.id,
        subject: 'Quarterly review',
        note: 'Bring the numbers',
        public_description: 'Review meeting',
        location: 'Berlin office',
        location_geocoded: { lat: 52.52, lng: 13.405, address: 'Berlin, Germany' },
        start_date: '2026-03-02',
        start_time: '09:30',
        end_date: '2026-03-02',
        end_time: '11:00:00',
        duration: 90,
        deal_id: deal.id,
        contact_id: contact.id,
        company_id: company.id,
        activity_type: 'meeting',
        done: true
      }
      const created = await createActivity(acme, body)
      expect(created).toMatchObject({ ...body, start_time: '09:30:00', end_time: '11:00:00' })
      const read = await t.http().get(`/activities/${created.id}`).set(acme.key)
      expect(read.body).toMatchObject({ ...body, start_time: '09:30:00', end_time: '11:00:00' })
    })

    it('when a date does not exist on the calendar, then 400 with the date field named', async () => {
      for (const [field, value] of [['start_date', '2026-02-30'], ['end_date', '2025-02-29'], ['start_date', '2026-13-01'], ['start_date', '2026-3-1'], ['end_date', '02/03/2026']]) {
        const response = await post(acme, { subject: 'x', [field]: value })
        expect(response.status, `${field}=${value}`).toBe(400)
        expect(response.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
        expect(response.body.errors[field]).toEqual(expect.any(String))
      }
      const leap = await post(acme, { subject: 'leap day', start_date: '2028-02-29' })
      expect(leap.status).toBe(201)
      expect(leap.body.start_date).toBe('2028-02-29')
    })

    it('when a time is not HH:MM or HH:MM:SS of a real time, then 400 with the time field named', async () => {
      for (const [field, value] of [['start_time', '24:00'], ['start_time', '9:00'], ['end_time', '10:60'], ['end_time', '10:00:60'], ['start_time', '10:00:00Z'], ['start_time', 930]]) {
        const response = await post(acme, { subject: 'x', [field]: value })
        expect(response.status, `${field}=${value}`).toBe(400)
        expect(response.body.errors[field]).toEqual(expect.any(String))
      }
    })

    it('when duration is not a whole number of minutes >= 0, then 400 with errors.duration', async () => {
      for (const duration of [-1, 1.5, '30']) {
        const response = await post(acme, { subject: 'x', duration })
        expect(response.status, String(duration)).toBe(400)
        expect(response.body.errors.duration).toEqual(expect.any(String))
      }
      const zero = await createActivity(acme, { subject: 'instant', duration: 0 })
      expect(zero.duration).toBe(0)
    })

    it('when the end comes before the start, then 400; an end equal to the start is accepted', async () => {
      const earlierDay = await post(acme, { subject: 'x', start_date: '2026-03-10', end_date: '2026-03-09' })
      expect(earlierDay.status).toBe(400)
      expect(earlierDay.body.errors).toEqual({ end_date: 'must not be before start_date' })

      const earlierTime = await post(acme, { subject: 'x', start_date: '2026-03-10', start_time: '10:00', end_date: '2026-03-10', end_time: '09:59' })
      expect(earlierTime.status).toBe(400)
      expect(earlierTime.body.errors).toEqual({ end_time: 'must not be before start_time' })

      const sameDayImplied = await post(acme, { subject: 'x', start_date: '2026-03-10', start_time: '10:00', end_time: '09:00' })
      expect(sameDayImplied.status).toBe(400)

      const overnight = await createActivity(acme, { subject: 'night shift', start_date: '2026-03-10', start_time: '22:00', end_date: '2026-03-11', end_time: '06:00' })
      expect(overnight.end_time).toBe('06:00:00')
      const instant = await createActivity(acme, { subject: 'x', start_date: '2026-03-10', start_time: '10:00', end_date: '2026-03-10', end_time: '10:00:00' })
      expect(instant.end_time).toBe('10:00:00')

      // On patch the stored values fill in what the patch does not send.
      const patched = await t.http().patch(`/activities/${instant.id}`).set(acme.key).send({ end_time: '09:00' })
      expect(patched.status).toBe(400)
      expect(patched.body.errors).toEqual({ end_time: 'must not be before start_time' })
      const patchedDate = await t.http().patch(`/activities/${instant.id}`).set(acme.key).send({ start_date: '2026-03-11' })
      expect(patchedDate.status).toBe(400)
      expect(patchedDate.body.errors).toEqual({ end_date: 'must not be before start_date' })
      const read = await t.http().get(`/activities/${instant.id}`).set(acme.key)
      expect(read.body).toMatchObject({ start_date: '2026-03-10', end_time: '10:00:00' })
    })

    it('when a field the service sets is sent, then 400 with the field named', async () => {
      const response = await post(acme, { subject: 'x', created_by_user_id: other.user.id, id: 1, activity_type_id: 1, updated_at: '2020-01-01T00:00:00.000Z' })
      expect(response.status).toBe(400)
      expect(response.body.errors).toMatchObject({ created_by_user_id: 'is not allowed', id: 'is not allowed', activity_type_id: 'is not allowed', updated_at: 'is not allowed' })
    })

    it('when assigned_to_user_id is not a member or a reference is not a live record of the organization, then 400 with errors.<field>', async () => {
      const contact = await seedContact(t, acme.organization.id)
      await t.db('contacts').where({ organization_id: acme.organization.id, id: contact.id }).update({ deleted_at: t.db.fn.now() })
      const response = await post(acme, { subject: 'x', assigned_to_user_id: other.user.id, contact_id: contact.id, deal_id: 999999, company_id: 999999 })
      expect(response.status).toBe(400)
      expect(response.body.errors).toEqual({
        assigned_to_user_id: expect.any(String), contact_id: expect.any(String), deal_id: expect.any(String), company_id: expect.any(String)
      })
    })
  })

  describe('activity types', () => {
    it('when the type is a built-in one in any case, then it is stored in lower case; an unknown type is a 400', async () => {
      for (const type of ['call', 'meeting', 'task', 'deadline', 'email', 'lunch', 'Call', 'LUNCH']) {
        const created = await createActivity(acme, { subject: type, activity_type: type })
        expect(created.activity_type).toBe(type.toLowerCase())
        expect(created.activity_type_id).toBeNull()
      }
      for (const activity_type of ['dinner', '', 5]) {
        const response = await post(acme, { subject: 'x', activity_type })
        expect(response.status, String(activity_type)).toBe(400)
        expect(response.body.errors.activity_type).toEqual(expect.any(String))
      }
    })

    it('when a custom type is deleted, then old activities keep it but new activities and patches may not use it', async () => {
      const tenant = await createTenant(t, 'Types')
      const type = await t.http().post('/activity-types').set(tenant.key).send({ name: 'Demo', color: '#00ff00', icon_key: 'video' })
      expect(type.status).toBe(201)
      const old = await createActivity(tenant, { subject: 'First demo', activity_type: 'demo' })
      expect(old).toMatchObject({ activity_type: 'Demo', activity_type_id: type.body.id })
      const call = await createActivity(tenant, { subject: 'A call', activity_type: 'call' })

      await t.http().delete(`/activity-types/${type.body.id}`).set(tenant.key).expect(200)

      const kept = await t.http().get(`/activities/${old.id}`).set(tenant.key)
      expect(kept.body).toMatchObject({ activity_type: 'Demo', activity_type_id: type.body.id })
      const listed = await t.http().get('/activities').set(tenant.key).send({ query: { activity_type: 'Demo' } })
      expect(listed.body.data.map((row: any) => row.id)).toEqual([old.id])

      const refused = await post(tenant, { subject: 'Second demo', activity_type: 'Demo' })
      expect(refused.status).toBe(400)
      expect(refused.body.errors.activity_type).toEqual(expect.any(String))
      const refusedPatch = await t.http().patch(`/activities/${call.id}`).set(tenant.key).send({ activity_type: 'Demo' })
      expect(refusedPatch.status).toBe(400)
      const resent = await t.http().patch(`/activities/${old.id}`).set(tenant.key).send({ activity_type: 'Demo' })
      expect(resent.status).toBe(400)

      // Other changes to the old activity leave its type alone.
      const renamed = await t.http().patch(`/activities/${old.id}`).set(tenant.key).send({ subject: 'First demo (done)' })
      expect(renamed.status).toBe(200)
      expect(renamed.body).toMatchObject({ subject: 'First demo (done)', activity_type: 'Demo', activity_type_id: type.body.id })
      const callRead = await t.http().get(`/activities/${call.id}`).set(tenant.key)
      expect(callRead.body.activity_type).toBe('call')

      // A new live type of the same name is usable again, and is a different type.
      const reborn = await t.http().post('/activity-types').set(tenant.key).send({ name: 'Demo' })
      const fresh = await createActivity(tenant, { subject: 'Second demo', activity_type: 'Demo' })
      expect(fresh.activity_type_id).toBe(reborn.body.id)
    })
  })

  describe('location_geocoded', () => {
    it('when the client sends coordinates, then they are stored with address null when absent; out-of-range values are a 400', async () => {
      const noAddress = await createActivity(acme, { subject: 'x', location: 'HQ', location_geocoded: { lat: -33.8688, lng: 151.2093 } })
      expect(noAddress.location_geocoded).toEqual({ lat: -33.8688, lng: 151.2093, address: null })
      const read = await t.http().get(`/activities/${noAddress.id}`).set(acme.key)
      expect(read.body.location_geocoded).toEqual({ lat: -33.8688, lng: 151.2093, address: null })

      for (const location_geocoded of [{ lat: 90.5, lng: 0 }, { lat: 0, lng: -180.1 }, { lat: '1', lng: 2 }, { lat: 1 }, { lat: 1, lng: 2, extra: true }]) {
        const response = await post(acme, { subject: 'x', location_geocoded })
        expect(response.status, JSON.stringify(location_geocoded)).toBe(400)
        expect(Object.keys(response.body.errors).join(' ')).toMatch(/location_geocoded/)
      }
      const edges = await createActivity(acme, { subject: 'x', location_geocoded: { lat: -90, lng: 180, address: 'edge' } })
      expect(edges.location_geocoded).toEqual({ lat: -90, lng: 180, address: 'edge' })
    })

    it('when no geocoder is configured, then a location stays unresolved (null) and the create succeeds', async () => {
      const created = await createActivity(acme, { subject: 'x', location: 'Somewhere 1, Berlin' })
      expect(created.location_geocoded).toBeNull()
      const read = await t.http().get(`/activities/${created.id}`).set(acme.key)
      expect(read.body.location_geocoded).toBeNull()
    })

    it('when the location changes without coordinates, then the old coordinates are cleared', async () => {
      const created = await createActivity(acme, { subject: 'x', location: 'A', location_geocoded: { lat: 1, lng: 2, address: 'A' } })
      const same = await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ location: 'A', note: 'same place' })
      expect(same.body.location_geocoded).toEqual({ lat: 1, lng: 2, address: 'A' })
      const moved = await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ location: 'B' })
      expect(moved.status).toBe(200)
      expect(moved.body.location_geocoded).toBeNull()
      const read = await t.http().get(`/activities/${created.id}`).set(acme.key)
      expect(read.body).toMatchObject({ location: 'B', location_geocoded: null })
    })
  })

  describe('patch and delete', () => {
    it('when any creatable field is patched, including done, then the change reads back', async () => {
      const created = await createActivity(acme, { subject: 'Draft', activity_type: 'task', start_date: '2026-05-01' })
      const patched = await t.http().patch(`/activities/${created.id}`).set(acme.key)
        .send({ subject: 'Final', done: true, activity_type: 'deadline', start_time: '08:15', duration: 45, note: null })
      expect(patched.status).toBe(200)
      expect(patched.body).toMatchObject({ subject: 'Final', done: true, activity_type: 'deadline', start_time: '08:15:00', duration: 45, start_date: '2026-05-01' })
      const read = await t.http().get(`/activities/${created.id}`).set(acme.key)
      expect(read.body).toMatchObject({ subject: 'Final', done: true, activity_type: 'deadline', start_time: '08:15:00', duration: 45 })

      for (const body of [{}, { organization_id: other.organization.id }, { created_by_user_id: other.user.id }, { done: 'yes' }, { start_date: '2026-04-31' }]) {
        const bad = await t.http().patch(`/activities/${created.id}`).set(acme.key).send(body)
        expect(bad.status, JSON.stringify(body)).toBe(400)
      }
    })

    it('when an activity is deleted, then deleted_at = updated_at and it is gone from reads and lists', async () => {
      const created = await createActivity(acme, { subject: 'Goodbye unique-7421' })
      const removed = await t.http().delete(`/activities/${created.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.id).toBe(created.id)
      expect(removed.body.deleted_at).toEqual(expect.any(String))
      expect(removed.body.updated_at).toBe(removed.body.deleted_at)
      expect((await t.http().get(`/activities/${created.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().patch(`/activities/${created.id}`).set(acme.key).send({ done: true })).status).toBe(404)
      const list = await t.http().get('/activities').set(acme.key).send({ query: { subject: 'unique-7421' } })
      expect(list.body.total).toBe(0)
    })
  })

  describe('bulk completion', () => {
    it('when ids mix live, deleted and another organization\'s activities, then only the live ones of the caller are updated', async () => {
      const mine = [
        await createActivity(acme, { subject: 'b1' }),
        await createActivity(acme, { subject: 'b2' }),
        await createActivity(acme, { subject: 'b3' })
      ]
      const untouched = await createActivity(acme, { subject: 'b4' })
      const deleted = await createActivity(acme, { subject: 'b5' })
      await t.http().delete(`/activities/${deleted.id}`).set(acme.key).expect(200)
      const theirs = await createActivity(other, { subject: 'theirs' })

      const result = await t.http().patch('/activities').set(acme.key)
        .send({ ids: [mine[2].id, mine[0].id, mine[1].id, deleted.id, theirs.id, 99999999], done: true })
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      expect(result.body).toEqual({ updated: 3, ids: mine.map((a) => a.id).sort((a, b) => a - b) })

      for (const activity of mine) {
        expect((await t.http().get(`/activities/${activity.id}`).set(acme.key)).body.done).toBe(true)
      }
      expect((await t.http().get(`/activities/${untouched.id}`).set(acme.key)).body.done).toBe(false)
      expect((await t.http().get(`/activities/${theirs.id}`).set(other.key)).body.done).toBe(false)
      const deletedRow = await t.db('activities').where({ organization_id: acme.organization.id, id: deleted.id }).first()
      expect(deletedRow.done).toBe(false)

      const reopened = await t.http().patch('/activities').set(acme.key).send({ ids: [mine[0].id], done: false })
      expect(reopened.body).toEqual({ updated: 1, ids: [mine[0].id] })
      expect((await t.http().get(`/activities/${mine[0].id}`).set(acme.key)).body.done).toBe(false)
    })

    it('when the body is not {ids: 1..500 positive integers, done: boolean}, then 400 and nothing changes', async () => {
      const activity = await createActivity(acme, { subject: 'guarded' })
      const many = Array.from({ length: 501 }, (_, i) => i + 1)
      for (const body of [
        {}, { done: true }, { ids: [activity.id] }, { ids: [], done: true }, { ids: many, done: true },
        { ids: [0], done: true }, { ids: [-1], done: true }, { ids: [1.5], done: true }, { ids: ['1'], done: true },
        { ids: activity.id, done: true }, { ids: [activity.id], done: 'true' },
        { ids: [activity.id], done: true, subject: 'sneaky' }, { ids: [activity.id], done: true, organization_id: acme.organization.id }
      ]) {
        const response = await t.http().patch('/activities').set(acme.key).send(body)
        expect(response.status, JSON.stringify(body).slice(0, 80)).toBe(400)
        expect(response.body.className).toBe('bad-request')
      }
      const filtered = await t.http().patch('/activities').query({ subject: 'guarded' }).set(acme.key).send({ ids: [activity.id], done: true })
      expect(filtered.status).toBe(400)
      const ok500 = await t.http().patch('/activities').set(acme.key).send({ ids: many.slice(0, 500), done: false })
      expect(ok500.status).toBe(200)
      const read = await t.http().get(`/activities/${activity.id}`).set(acme.key)
      expect(read.body).toMatchObject({ done: false, subject: 'guarded' })
    })
  })

  describe('across organizations', () => {
    it('when another organization\'s activity is read, patched or deleted by id, then 404', async () => {
      const theirs = await createActivity(other, { subject: 'Private' })
      for (const request of [
        t.http().get(`/activities/${theirs.id}`).set(acme.key),
        t.http().patch(`/activities/${theirs.id}`).set(acme.key).send({ done: true }),
        t.http().delete(`/activities/${theirs.id}`).set(acme.key)
      ]) {
        const response = await request
        expect(response.status).toBe(404)
        expect(response.body).toMatchObject({ name: 'NotFound', message: `No record found for id '${theirs.id}'`, className: 'not-found' })
      }
      const still = await t.http().get(`/activities/${theirs.id}`).set(other.key)
      expect(still.body).toMatchObject({ done: false, deleted_at: null })
    })

    it('when another organization_id is listed or written, then 403', async () => {
      const list = await t.http().get('/activities').set(acme.key).send({ query: { organization_id: other.organization.id } })
      expect(list.status).toBe(403)
      expect(list.body).toMatchObject({ name: 'Forbidden', className: 'forbidden' })
      const create = await post(acme, { organization_id: other.organization.id, subject: 'Intruder' })
      expect(create.status).toBe(403)
      const bearerList = await t.http().get('/activities').set(acme.bearer).send({ query: { organization_id: other.organization.id } })
      expect(bearerList.status).toBe(403)
      const bulk = await t.http().patch('/activities').query({ organization_id: other.organization.id }).set(acme.key).send({ ids: [1], done: true })
      expect(bulk.status).toBe(403)
    })

    it('when a body references another organization\'s deal, contact, company or user, then 400 with errors.<field>', async () => {
      const { deal } = await seedDeal(t, other.organization.id)
      const contact = await seedContact(t, other.organization.id)
      const company = await createCompany(other)
      const response = await post(acme, { subject: 'x', deal_id: deal.id, contact_id: contact.id, company_id: company.id, assigned_to_user_id: other.user.id })
      expect(response.status).toBe(400)
      expect(Object.keys(response.body.errors).sort()).toEqual(['assigned_to_user_id', 'company_id', 'contact_id', 'deal_id'])
      const mine = await createActivity(acme, { subject: 'mine' })
      const patch = await t.http().patch(`/activities/${mine.id}`).set(acme.key).send({ deal_id: deal.id })
      expect(patch.status).toBe(400)
      expect(patch.body.errors).toEqual({ deal_id: expect.any(String) })
    })

    it('when a JWT caller lists without organization_id, then 400; without credentials, then 401', async () => {
      const noOrg = await t.http().get('/activities').set(acme.bearer)
      expect(noOrg.status).toBe(400)
      expect(noOrg.body.errors.organization_id).toEqual(expect.any(String))
      const anonymous = await t.http().get('/activities')
      expect(anonymous.status).toBe(401)
      expect(anonymous.body).toMatchObject({ name: 'NotAuthenticated', message: 'Invalid API key' })
    })
  })

  it('when the OpenAPI document is read, then both resources and the bulk PATCH /activities are described', async () => {
    const response = await t.http().get('/openapi.json')
    expect(response.status).toBe(200)
    const { paths, components } = response.body
    expect(Object.keys(paths['/activities'])).toEqual(expect.arrayContaining(['get', 'post', 'patch']))
    expect(paths['/activities'].patch.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ActivityCompletion' })
    expect(components.schemas.ActivityCompletion.properties.ids).toMatchObject({ minItems: 1, maxItems: 500 })
    expect(Object.keys(paths['/activities/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']))
    expect(Object.keys(paths['/activity-types/{id}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']))
  })

  it('when a call by id carries list filters, then 400; the list join flag is ignored by declaration', async () => {
    const created = await createActivity(acme, { subject: 'filtered get' })
    const filtered = await t.http().get(`/activities/${created.id}`).set(acme.key).send({ query: { subject: 'filtered get' } })
    expect(filtered.status).toBe(400)
    expect(filtered.body.errors).toEqual({ subject: 'is not allowed' })
    const plain = await t.http().get(`/activities/${created.id}`).set(acme.key)
    const flagged = await t.http().get(`/activities/${created.id}`).set(acme.key).send({ query: { fastJoinForActivityList: true } })
    expect(flagged.status).toBe(200)
    expect(flagged.body).toEqual(plain.body)
  })

  it('when a new user plans a week for a deal and contact with a custom Demo type, then the range, bulk completion and count are right', async () => {
    const tenant = await createTenant(t, 'Newcomer')
    const { deal } = await seedDeal(t, tenant.organization.id, 'Pilot')
    const contact = await seedContact(t, tenant.organization.id, { first_name: 'Max', last_name: 'Muster' })
    const demo = await t.http().post('/activity-types').set(tenant.key).send({ name: 'Demo', color: '#3366FF', icon_key: 'video' })
    expect(demo.status).toBe(201)
    const week = ['2026-06-01', '2026-06-02', '2026-06-03', '2026-06-04', '2026-06-05']
    const types = ['call', 'meeting', 'task', 'Demo', 'Demo']
    const created: any[] = []
    for (const [i, day] of week.entries()) {
      created.push(await createActivity(tenant, {
        subject: `${types[i]} with Max`, activity_type: types[i], start_date: day, start_time: '10:00', end_time: '10:30',
        duration: 30, deal_id: deal.id, contact_id: contact.id
      }))
    }
    await createActivity(tenant, { subject: 'Next week', activity_type: 'call', start_date: '2026-06-08', deal_id: deal.id })

    const midweek = await t.http().get('/activities').set(tenant.key)
      .send({ query: { deal_id: deal.id, start_date: { $gte: '2026-06-02', $lte: '2026-06-04' }, $sort: { start_date: 1 }, fastJoinForActivityList: true } })
    expect(midweek.body.total).toBe(3)
    expect(midweek.body.data.map((row: any) => row.activity_type)).toEqual(['meeting', 'task', 'Demo'])
    expect(midweek.body.data[0].contact).toEqual({ id: contact.id, full_name: 'Max Muster' })

    const done = await t.http().patch('/activities').set(tenant.key).send({ ids: created.map((a) => a.id), done: true })
    expect(done.body.updated).toBe(5)
    const open = await t.http().get('/activities').set(tenant.key).send({ query: { done: false } })
    expect(open.body.data.map((row: any) => row.subject)).toEqual(['Next week'])

    const count = await t.http().get(`/activity-types/${demo.body.id}`).set(tenant.key)
    expect(count.body.activities_count).toBe(2)
  })
})
