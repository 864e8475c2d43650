import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The body of a 201, or a thrown error naming what failed. */
export const created = (res: { status: number; body: any }, what: string) => {
  if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

export async function createContact(t: TestApp, tenant: Tenant, fields: Record<string, unknown> = {}) {
  return created(await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Marie', last_name: 'Curie', ...fields }), 'contact')
}

export async function createConversation(t: TestApp, tenant: Tenant, fields: Record<string, unknown> = {}) {
  const contactId = fields.contact_id ?? (await createContact(t, tenant)).id
  return created(await t.http().post('/conversations').set(tenant.key).send({ channel: 'playground', ...fields, contact_id: contactId }), 'conversation')
}

/** A pipeline of the given type with two stages. */
export async function createBoard(t: TestApp, tenant: Tenant, type: 'conversation' | 'deal' = 'conversation') {
  const pipeline = created(await t.http().post('/pipelines').set(tenant.key).send({ name: `${type} board`, type }), 'pipeline')
  const stages = []
  for (const [position, name] of ['New', 'Qualified'].entries()) {
    stages.push(created(await t.http().post('/pipeline-stages').set(tenant.key).send({ pipeline_id: pipeline.id, name, position }), 'stage'))
  }
  return { pipeline, stages }
}

export const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()
