import { describe, it, expect, beforeAll } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createDeal, createPipeline } from './deal-fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('pipelines and pipeline stages', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  describe('pipelines', () => {
    it("when a pipeline is created with a name only, then 201 with type 'deal' and position 0", async () => {
      const res = await t.http().post('/pipelines').set(acme.key).send({ name: 'Sales' })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, name: 'Sales', type: 'deal', position: 0,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      expect((await t.http().get(`/pipelines/${res.body.id}`).set(acme.key)).body).toEqual(res.body)
    })

    it.each([
      [{ name: 'X', type: 'tickets' }, 'type'],
      [{ name: '' }, 'name'],
      [{ name: 'X', position: -1 }, 'position'],
      [{}, 'name'],
      [{ name: 'X', id: 5 }, 'id']
    ])('when the body is %j, then 400 with errors.%s', async (body, field) => {
      const res = await t.http().post('/pipelines').set(acme.key).send(body)
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([field])
    })

    it('when pipelines are listed, then they come in position order and filter by type', async () => {
      const org = await createTenant(t, 'Boards')
      for (const [name, type, position] of [['Third', 'deal', 3], ['First', 'deal', 1], ['Inbox', 'conversation', 2]] as const) {
        await t.http().post('/pipelines').set(org.key).send({ name, type, position }).expect(201)
      }
      const all = await t.http().get('/pipelines').set(org.key)
      expect(all.body).toMatchObject({ total: 3, limit: 10, skip: 0 })
      expect(all.body.data.map((p: any) => p.name)).toEqual(['First', 'Inbox', 'Third'])
      const deals = await t.http().get('/pipelines').set(org.key).send({ query: { type: 'deal' } })
      expect(deals.body.data.map((p: any) => p.name)).toEqual(['First', 'Third'])
      const desc = await t.http().get('/pipelines').set(org.key).query({ $sort: { position: -1 } })
      expect(desc.body.data.map((p: any) => p.name)).toEqual(['Third', 'Inbox', 'First'])
    })

    it('when a pipeline is patched, then the change is read back', async () => {
      const { pipeline } = await createPipeline(t, acme, [])
      const res = await t.http().patch(`/pipelines/${pipeline.id}`).set(acme.key).send({ name: 'Renewals', position: 4 })
      expect(res.status).toBe(200)
      expect((await t.http().get(`/pipelines/${pipeline.id}`).set(acme.key)).body).toMatchObject({ name: 'Renewals', position: 4 })
    })

    it('when live deals use a pipeline, then deleting it is 400 naming how many deals, and it stays', async () => {
      const board = await createPipeline(t, acme, ['A', 'B'])
      await createDeal(t, acme, board)
      await createDeal(t, acme, board, { pipeline_stage_id: board.stages[1].id })
      await createDeal(t, acme, board, { status: 'won' })
      const res = await t.http().delete(`/pipelines/${board.pipeline.id}`).set(acme.key)
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ name: 'BadRequest', code: 400 })
      expect(res.body.message).toBe('This pipeline is used by 3 deals (2 open); move them to another pipeline or delete them first')
      expect((await t.http().get(`/pipelines/${board.pipeline.id}`).set(acme.key)).status).toBe(200)
      expect((await t.http().get(`/pipeline-stages/${board.stages[0].id}`).set(acme.key)).status).toBe(200)
    })

    it('when a pipeline no deal uses is deleted, then it and its stages are soft-deleted at the same instant', async () => {
      const board = await createPipeline(t, acme, ['A', 'B'])
      const deal = await createDeal(t, acme, board)
      await t.http().delete(`/deals/${deal.id}`).set(acme.key).expect(200)
      const res = await t.http().delete(`/pipelines/${board.pipeline.id}`).set(acme.key)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`/pipelines/${board.pipeline.id}`).set(acme.key)).status).toBe(404)
      for (const stage of board.stages) {
        expect((await t.http().get(`/pipeline-stages/${stage.id}`).set(acme.key)).status).toBe(404)
      }
      const rows = await t.db('pipeline_stages').where({ organization_id: acme.organization.id, pipeline_id: board.pipeline.id })
      expect(rows.map((row) => row.deleted_at.toISOString())).toEqual([res.body.deleted_at, res.body.deleted_at])
    })

    it("when deals use a pipeline, then its type cannot become 'conversation'", async () => {
      const board = await createPipeline(t, acme, ['A'])
      await createDeal(t, acme, board)
      const res = await t.http().patch(`/pipelines/${board.pipeline.id}`).set(acme.key).send({ type: 'conversation' })
      expect(res.status).toBe(400)
      expect(res.body.message).toContain('used by 1 deal (1 open)')
      expect((await t.http().get(`/pipelines/${board.pipeline.id}`).set(acme.key)).body.type).toBe('deal')
    })
  })

  describe('pipeline stages', () => {
    it('when a stage is created, then 201 with its pipeline, position and probability', async () => {
      const { pipeline } = await createPipeline(t, acme, [])
      const res = await t.http().post('/pipeline-stages').set(acme.key).send({ pipeline_id: pipeline.id, name: 'Qualified', position: 2, probability: 40 })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), organization_id: acme.organization.id, pipeline_id: pipeline.id, name: 'Qualified', position: 2, probability: 40,
        created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
      })
      const bare = await t.http().post('/pipeline-stages').set(acme.key).send({ pipeline_id: pipeline.id, name: 'Bare' })
      expect(bare.body).toMatchObject({ position: 0, probability: null })
    })

    it.each([
      [{ name: 'X', probability: 101 }, 'probability'],
      [{ name: 'X', probability: 50.5 }, 'probability'],
      [{ name: '' }, 'name']
    ])('when the body is %j, then 400 with errors.%s', async (body, field) => {
      const { pipeline } = await createPipeline(t, acme, [])
      const res = await t.http().post('/pipeline-stages').set(acme.key).send({ pipeline_id: pipeline.id, ...body })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.errors)).toEqual([field])
    })

    it('when the pipeline is deleted or missing, then 400 with errors.pipeline_id', async () => {
      const { pipeline } = await createPipeline(t, acme, [])
      await t.http().delete(`/pipelines/${pipeline.id}`).set(acme.key).expect(200)
      const res = await t.http().post('/pipeline-stages').set(acme.key).send({ pipeline_id: pipeline.id, name: 'Late' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_id: 'must be a pipeline of this organization' })
    })

    it('when stages are listed by pipeline, then they come in position order', async () => {
      const board = await createPipeline(t, acme, ['A', 'B', 'C'])
      await t.http().patch(`/pipeline-stages/${board.stages[0].id}`).set(acme.key).send({ position: 9 }).expect(200)
      await createPipeline(t, acme, ['Other'])
      const res = await t.http().get('/pipeline-stages').set(acme.key).send({ query: { pipeline_id: board.pipeline.id } })
      expect(res.status).toBe(200)
      expect(res.body.total).toBe(3)
      expect(res.body.data.map((s: any) => s.name)).toEqual(['B', 'C', 'A'])
    })

    it('when a patch tries to move a stage to another pipeline, then 400', async () => {
      const board = await createPipeline(t, acme, ['A'])
      const other = await createPipeline(t, acme, [])
      const res = await t.http().patch(`/pipeline-stages/${board.stages[0].id}`).set(acme.key).send({ pipeline_id: other.pipeline.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_id: 'is not allowed' })
    })

    it('when live deals are in a stage, then deleting it is 400 naming how many; once they move, it can go', async () => {
      const board = await createPipeline(t, acme, ['A', 'B'])
      const deal = await createDeal(t, acme, board)
      const refused = await t.http().delete(`/pipeline-stages/${board.stages[0].id}`).set(acme.key)
      expect(refused.status).toBe(400)
      expect(refused.body.message).toBe('This stage is used by 1 deal (1 open); move them to another stage or delete them first')
      expect((await t.http().get(`/pipeline-stages/${board.stages[0].id}`).set(acme.key)).status).toBe(200)
      await t.http().patch(`/deals/${deal.id}`).set(acme.key).send({ pipeline_stage_id: board.stages[1].id }).expect(200)
      const removed = await t.http().delete(`/pipeline-stages/${board.stages[0].id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toMatch(ISO_MS)
      expect((await t.http().get(`/pipeline-stages/${board.stages[0].id}`).set(acme.key)).status).toBe(404)
    })
  })

  describe('cross-organization attempts', () => {
    let foreign: { pipeline: any; stages: any[] }
    beforeAll(async () => {
      foreign = await createPipeline(t, globex, ['G'])
    })

    it('when another organization reads, patches or deletes a pipeline or stage by id, then 404 and it is unchanged', async () => {
      for (const path of [`/pipelines/${foreign.pipeline.id}`, `/pipeline-stages/${foreign.stages[0].id}`]) {
        const id = path.split('/').pop()
        const read = await t.http().get(path).set(acme.key)
        expect(read.status).toBe(404)
        expect(read.body).toEqual({ name: 'NotFound', message: `No record found for id '${id}'`, code: 404, className: 'not-found' })
        expect((await t.http().patch(path).set(acme.key).send({ name: 'Hijacked' })).status).toBe(404)
        expect((await t.http().delete(path).set(acme.key)).status).toBe(404)
        expect((await t.http().get(path).set(globex.key)).body).toMatchObject({ name: path.startsWith('/pipelines') ? 'Sales' : 'G', deleted_at: null })
      }
    })

    it('when a key lists or creates with another organization_id, then 403', async () => {
      for (const path of ['/pipelines', '/pipeline-stages']) {
        const res = await t.http().get(path).set(acme.key).send({ query: { organization_id: globex.organization.id } })
        expect(res.status).toBe(403)
      }
      const created = await t.http().post('/pipelines').set(acme.key).send({ name: 'Planted', organization_id: globex.organization.id })
      expect(created.status).toBe(403)
    })

    it("when a stage is created in another organization's pipeline, then 400 with errors.pipeline_id", async () => {
      const res = await t.http().post('/pipeline-stages').set(acme.key).send({ pipeline_id: foreign.pipeline.id, name: 'Sneaky' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ pipeline_id: 'must be a pipeline of this organization' })
    })
  })
})
