import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'
import { activityCalls, seedContact, seedDeal } from './activity-fixtures.js'

describe('activity lists', () => {
  let t: TestApp
  useApp({}, (app) => ({ t } = app))

  const { post, createActivity, createCompany } = activityCalls(() => t)

  describe('lists', () => {
    let tenant: Tenant
    let member: Awaited<ReturnType<typeof addMember>>
    let deal: any
    let contact: any
    let company: any
    const ids: Record<string, number> = {}

    beforeAll(async () => {
      tenant = await createTenant(t, 'Week')
      member = await addMember(t, tenant)
      deal = (await seedDeal(t, tenant.organization.id, 'Rollout')).deal
      contact = await seedContact(t, tenant.organization.id, { first_name: 'Ann', last_name: 'Lee', email: 'ann@example.test' })
      company = await createCompany(tenant, 'Globex')
      const rows = [
        { key: 'mon', subject: 'Kick-off CALL', start_date: '2026-03-02', activity_type: 'call', deal_id: deal.id },
        { key: 'tue', subject: 'Product demo', start_date: '2026-03-03', activity_type: 'meeting', contact_id: contact.id, assigned_to_user_id: member.user.id },
        { key: 'wed', subject: 'Send 100% proposal', start_date: '2026-03-04', activity_type: 'task', company_id: company.id, done: true },
        { key: 'thu', subject: 'Follow-up call', start_date: '2026-03-05', activity_type: 'call', deal_id: deal.id, contact_id: contact.id },
        { key: 'fri', subject: 'Lunch', start_date: '2026-03-06', activity_type: 'lunch', assigned_to_user_id: member.user.id },
        { key: 'none', subject: 'Someday', activity_type: 'task' }
      ]
      for (const { key, ...body } of rows) ids[key] = (await createActivity(tenant, body)).id
      // One by the member, so created_by_user_id has two values.
      const byMember = await t.http().post('/activities').set(member.bearer).send({ organization_id: tenant.organization.id, subject: 'Member note', start_date: '2026-03-09' })
      expect(byMember.status).toBe(201)
      ids.member = byMember.body.id
    })

    const list = async (query: Record<string, unknown>) => {
      const response = await t.http().get('/activities').set(tenant.key).send({ query })
      expect(response.status, JSON.stringify(response.body)).toBe(200)
      return response.body
    }
    const idsOf = (page: any) => page.data.map((row: any) => row.id)

    it('when start_date has $gte and $lte, then only activities in that range are listed', async () => {
      const page = await list({ start_date: { $gte: '2026-03-03', $lte: '2026-03-05' }, $sort: { start_date: 1 } })
      expect(page.total).toBe(3)
      expect(idsOf(page)).toEqual([ids.tue, ids.wed, ids.thu])
      const exact = await list({ start_date: '2026-03-06' })
      expect(idsOf(exact)).toEqual([ids.fri])
      const invalid = await t.http().get('/activities').set(tenant.key).send({ query: { start_date: { $gte: '2026-02-30' } } })
      expect(invalid.status).toBe(400)
    })

    it('when the query string carries the range, then it filters the same way', async () => {
      const response = await t.http().get('/activities').query('start_date[$gte]=2026-03-05&start_date[$lte]=2026-03-06&$sort[start_date]=-1').set(tenant.key)
      expect(response.status).toBe(200)
      expect(idsOf(response.body)).toEqual([ids.fri, ids.thu])
    })

    it('when subject is given, then it matches case-insensitively anywhere, wildcards literally', async () => {
      expect(idsOf(await list({ subject: 'call', $sort: { id: 1 } }))).toEqual([ids.mon, ids.thu])
      expect(idsOf(await list({ subject: 'DEMO' }))).toEqual([ids.tue])
      expect(idsOf(await list({ subject: '100%' }))).toEqual([ids.wed])
      expect((await list({ subject: '%' })).total).toBe(1)
      expect((await list({ subject: 'nothing like it' })).total).toBe(0)
    })

    it('when filtering by each reference, type and done, then only the matching activities are listed', async () => {
      expect(idsOf(await list({ deal_id: deal.id, $sort: { id: 1 } }))).toEqual([ids.mon, ids.thu])
      expect(idsOf(await list({ contact_id: contact.id, $sort: { id: 1 } }))).toEqual([ids.tue, ids.thu])
      expect(idsOf(await list({ company_id: company.id }))).toEqual([ids.wed])
      expect(idsOf(await list({ assigned_to_user_id: member.user.id, $sort: { id: 1 } }))).toEqual([ids.tue, ids.fri])
      expect(idsOf(await list({ created_by_user_id: member.user.id }))).toEqual([ids.member])
      expect(idsOf(await list({ activity_type: 'call', $sort: { id: 1 } }))).toEqual([ids.mon, ids.thu])
      expect(idsOf(await list({ done: true }))).toEqual([ids.wed])
      expect((await list({ done: false })).total).toBe(6)
      expect((await list({ deal_id: null })).total).toBe(5)
      expect(idsOf(await list({ assigned_to_user_id: { $in: [member.user.id] }, done: false, start_date: { $gt: '2026-03-03' } }))).toEqual([ids.fri])
      const fromUrl = await t.http().get('/activities').query({ done: 'true', activity_type: 'task' }).set(tenant.key)
      expect(idsOf(fromUrl.body)).toEqual([ids.wed])
    })

    it('when $limit is absent, then 10 rows per page; $skip pages and unknown filters are a 400', async () => {
      for (let i = 0; i < 6; i++) await createActivity(tenant, { subject: `Filler ${i}`, start_date: '2026-04-01' })
      const page = await list({})
      expect(page).toMatchObject({ total: 13, limit: 10, skip: 0 })
      expect(page.data).toHaveLength(10)
      const second = await list({ $skip: 10 })
      expect(second.data).toHaveLength(3)
      expect(new Set([...idsOf(page), ...idsOf(second)]).size).toBe(13)
      for (const query of [{ location: 'x' }, { subject: { $ne: 'x' } }, { start_date: { $like: '2026%' } }, { $sort: { note: 1 } }]) {
        const response = await t.http().get('/activities').set(tenant.key).send({ query })
        expect(response.status, JSON.stringify(query)).toBe(400)
      }
      await t.db('activities').where({ organization_id: tenant.organization.id }).where('subject', 'like', 'Filler %').delete()
    })

    it('when fastJoinForActivityList is true, then each row carries exactly the short forms', async () => {
      const page = await list({ fastJoinForActivityList: true, $sort: { id: 1 }, $limit: 100 })
      const byId = new Map(page.data.map((row: any) => [row.id, row]))
      const owner = { id: tenant.user.id, full_name: `${tenant.user.first_name} ${tenant.user.last_name}` }
      const grace = { id: member.user.id, full_name: 'Grace Hopper' }
      expect(byId.get(ids.thu)).toMatchObject({
        created_by_user: owner,
        assigned_to_user: null,
        deal: { id: deal.id, name: 'Rollout' },
        contact: { id: contact.id, full_name: 'Ann Lee' },
        company: null
      })
      const thu = byId.get(ids.thu) as any
      expect(thu.created_by_user).toEqual(owner)
      expect(thu.deal).toEqual({ id: deal.id, name: 'Rollout' })
      expect(thu.contact).toEqual({ id: contact.id, full_name: 'Ann Lee' })
      expect((byId.get(ids.tue) as any).assigned_to_user).toEqual(grace)
      expect((byId.get(ids.wed) as any).company).toEqual({ id: company.id, name: 'Globex' })
      expect((byId.get(ids.member) as any).created_by_user).toEqual(grace)

      const plain = await list({ $limit: 1 })
      for (const key of ['created_by_user', 'assigned_to_user', 'deal', 'contact', 'company']) expect(plain.data[0]).not.toHaveProperty(key)
    })

    it('when the list is joined, then the newest activity carries all five relations', async () => {
      const full = await createActivity(tenant, {
        subject: 'Everything', assigned_to_user_id: member.user.id, deal_id: deal.id, contact_id: contact.id, company_id: company.id
      })
      const page = await t.http().get('/activities').set(tenant.key).send({ query: { fastJoinForActivityList: true, $limit: 7, $sort: { id: -1 } } })
      expect(page.body.data).toHaveLength(7)
      expect(page.body.data[0]).toMatchObject({
        id: full.id, assigned_to_user: { id: member.user.id }, deal: { id: deal.id }, contact: { id: contact.id }, company: { id: company.id }, created_by_user: { id: tenant.user.id }
      })
      await t.db('activities').where({ organization_id: tenant.organization.id, id: full.id }).delete()
    })

    it('when one activity is read, then users, deal (with its stage), contact and company come in their richer forms', async () => {
      const { stage } = await t.db('deals').where({ organization_id: tenant.organization.id, id: deal.id }).first().then(async (row: any) => ({
        stage: await t.db('pipeline_stages').where({ organization_id: tenant.organization.id, id: row.pipeline_stage_id }).first()
      }))
      await t.http().patch(`/activities/${ids.thu}`).set(tenant.key).send({ company_id: company.id, assigned_to_user_id: member.user.id }).expect(200)
      const read = await t.http().get(`/activities/${ids.thu}`).set(tenant.key)
      expect(read.status).toBe(200)
      expect(read.body.created_by_user).toEqual({ id: tenant.user.id, full_name: `${tenant.user.first_name} ${tenant.user.last_name}`, email: tenant.user.email })
      expect(read.body.assigned_to_user).toEqual({ id: member.user.id, full_name: 'Grace Hopper', email: member.user.email })
      expect(read.body.deal).toEqual({ id: deal.id, name: 'Rollout', stage: { id: stage.id, name: 'Proposal' } })
      expect(read.body.contact).toEqual({ id: contact.id, full_name: 'Ann Lee', email: 'ann@example.test' })
      expect(read.body.company).toEqual({ id: company.id, name: 'Globex', website: 'https://initech.example' })

      const bare = await t.http().get(`/activities/${ids.none}`).set(tenant.key)
      expect(bare.body).toMatchObject({ assigned_to_user: null, deal: null, contact: null, company: null })
    })
  })
})

describe('activities with a geocoder', () => {
  let t: TestApp
  let tenant: Tenant
  let server: http.Server
  const held: Array<() => void> = []
  const seen: string[] = []

  beforeAll(async () => {
    // A Nominatim-compatible geocoder on loopback: "Nowhere" fails, "Hold" waits to be released.
    server = http.createServer((request, response) => {
      const q = new URL(request.url!, 'http://localhost').searchParams.get('q') ?? ''
      seen.push(q)
      const answer = () => {
        if (q.includes('Nowhere')) {
          response.writeHead(500).end('boom')
          return
        }
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify([{ lat: '48.8584', lon: '2.2945', display_name: `${q}, Paris, France` }]))
      }
      if (q.includes('Hold')) held.push(answer)
      else answer()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    t = await startApp({ geocoderUrl: `http://127.0.0.1:${port}/search` })
    tenant = await createTenant(t, 'Geo')
  })
  afterAll(async () => {
    for (const release of held.splice(0)) release()
    await t.close()
    await new Promise((resolve) => server.close(resolve))
  })

  const waitForGeocoded = async (id: number) => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const read = await t.http().get(`/activities/${id}`).set(tenant.key)
      if (read.body.location_geocoded) return read.body.location_geocoded
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return null
  }

  it('when an activity has a location, then it is created unresolved and resolved afterwards without waiting for the geocoder', async () => {
    const created = await t.http().post('/activities').set(tenant.key).send({ subject: 'Visit', location: 'Hold Champ de Mars' })
    expect(created.status).toBe(201)
    expect(created.body.location_geocoded).toBeNull()
    // The geocoder still holds its answer: the create did not wait for it.
    for (let attempt = 0; attempt < 50 && held.length === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(held).toHaveLength(1)
    held.shift()!()
    expect(await waitForGeocoded(created.body.id)).toEqual({ lat: 48.8584, lng: 2.2945, address: 'Hold Champ de Mars, Paris, France' })
  })

  it('when the geocoder fails, then the create still succeeds and the location stays null', async () => {
    const created = await t.http().post('/activities').set(tenant.key).send({ subject: 'Lost', location: 'Nowhere at all' })
    expect(created.status).toBe(201)
    await t.app.service('activities').settled()
    expect(seen).toContain('Nowhere at all')
    const read = await t.http().get(`/activities/${created.body.id}`).set(tenant.key)
    expect(read.body.location_geocoded).toBeNull()
  })

  it('when the client sends coordinates or the location moves, then client values win and a move is resolved again', async () => {
    const created = await t.http().post('/activities').set(tenant.key)
      .send({ subject: 'Own', location: 'Client side', location_geocoded: { lat: 1, lng: 2, address: 'mine' } })
    await t.app.service('activities').settled()
    expect(seen).not.toContain('Client side')
    expect((await t.http().get(`/activities/${created.body.id}`).set(tenant.key)).body.location_geocoded).toEqual({ lat: 1, lng: 2, address: 'mine' })

    const moved = await t.http().patch(`/activities/${created.body.id}`).set(tenant.key).send({ location: 'Eiffel Tower' })
    expect(moved.body.location_geocoded).toBeNull()
    expect(await waitForGeocoded(created.body.id)).toEqual({ lat: 48.8584, lng: 2.2945, address: 'Eiffel Tower, Paris, France' })
  })
})
