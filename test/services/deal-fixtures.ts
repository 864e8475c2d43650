import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'

/** Fixtures of the deals tests, all through HTTP with the tenant's API key. */

const expectCreated = (res: { status: number; body: any }, what: string) => {
  if (res.status !== 201) throw new Error(`${what} failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** A 'deal' pipeline with stages named after the given names, in that order. */
export async function createPipeline(t: TestApp, tenant: Tenant, stageNames = ['Lead', 'Proposal', 'Negotiation'], fields: Record<string, unknown> = {}) {
  const pipeline = expectCreated(await t.http().post('/pipelines').set(tenant.key).send({ name: 'Sales', ...fields }), 'pipeline')
  const stages = []
  for (const [position, name] of stageNames.entries()) {
    const res = await t.http().post('/pipeline-stages').set(tenant.key).send({ pipeline_id: pipeline.id, name, position })
    stages.push(expectCreated(res, 'stage'))
  }
  return { pipeline, stages }
}

export async function createDeal(t: TestApp, tenant: Tenant, board: { pipeline: any; stages: any[] }, fields: Record<string, unknown> = {}) {
  const res = await t.http().post('/deals').set(tenant.key).send({
    name: 'Big deal', amount: 1500, currency: 'EUR', status: 'open',
    pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[0].id, ...fields
  })
  return expectCreated(res, 'deal')
}

export async function createProduct(t: TestApp, tenant: Tenant, fields: Record<string, unknown> = {}) {
  const res = await t.http().post('/products').set(tenant.key).send({ name: 'Widget', price: 100, currency: 'EUR', ...fields })
  return expectCreated(res, 'product')
}
