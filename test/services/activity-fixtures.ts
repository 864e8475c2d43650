import { expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'

/** Deals and contacts are written directly: the activities tests are not about their HTTP services. */
export async function seedDeal(t: TestApp, organizationId: number, name = 'Big deal') {
  const [pipeline] = await t.db('pipelines').insert({ organization_id: organizationId, name: 'Sales' }).returning('*')
  const [stage] = await t.db('pipeline_stages').insert({ organization_id: organizationId, pipeline_id: pipeline.id, name: 'Proposal' }).returning('*')
  const [deal] = await t.db('deals').insert({
    organization_id: organizationId, name, amount: '1000.00', currency: 'EUR', status: 'open',
    pipeline_id: pipeline.id, pipeline_stage_id: stage.id
  }).returning('*')
  return { deal, stage }
}

export async function seedContact(t: TestApp, organizationId: number, fields: Record<string, unknown> = {}) {
  const [contact] = await t.db('contacts')
    .insert({ organization_id: organizationId, first_name: 'Jane', last_name: 'Doe', email: 'jane@example.test', ...fields })
    .returning('*')
  return contact
}

/** The calls the activities tests make, on the app `app()` returns once it is started. */
export function activityCalls(app: () => TestApp) {
  const post = (tenant: Tenant, body: Record<string, unknown>) => app().http().post('/activities').set(tenant.key).send(body)
  const createActivity = async (tenant: Tenant, body: Record<string, unknown>) => {
    const response = await post(tenant, body)
    expect(response.status, JSON.stringify(response.body)).toBe(201)
    return response.body
  }
  const createCompany = async (tenant: Tenant, name = 'Initech') => {
    const response = await app().http().post('/companies').set(tenant.key).send({ name, website: 'https://initech.example' })
    expect(response.status).toBe(201)
    return response.body
  }
  return { post, createActivity, createCompany }
}
