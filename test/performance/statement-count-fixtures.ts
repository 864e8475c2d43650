import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createBoard, createConversation } from '../conversations/fixtures.js'
import { at, inDays, link, resourceWithHours } from '../reservations/fixtures.js'
import { png } from '../storage/fixtures.js'

/** Rows per list: every row points at related records of its own, so a statement per row would show. */
export const ROWS = 6

/** The records of the organization whose lists and reads are counted. */
export interface Pages {
  tenant: Tenant
  /** Activities with every relation, and one with none. */
  activities: { full: number; bare: number }
  /** A deal with one deal product, and one with six. */
  deals: { oneProduct: number; sixProducts: number }
  /** An activity type of one activity, and one of five. */
  activityTypes: { oneActivity: number; fiveActivities: number }
  /** A conversation with one assignee, and one with four. */
  conversations: { oneAssignee: number; fourAssignees: number }
  invitation: number
  product: number
}

const body = (res: { status: number; body: any }, what: string) => {
  if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/**
 * One organization with ROWS records of every listed resource (companies with a custom value,
 * contacts, deals, activities, conversations, reservations, members, invitations, product media),
 * each row with related records of its own, written through the API.
 */
export async function fillPages(t: TestApp): Promise<Pages> {
  const tenant = await createTenant(t, 'Counted')
  const post = async (path: string, fields: Record<string, unknown>) => body(await t.http().post(path).set(tenant.key).send(fields), path)
  const members = [tenant.user.id]
  for (let i = 1; i < ROWS; i++) members.push((await addMember(t, tenant)).user.id)
  await post('/custom-fields', { entity_type: 'company', key: 'budget', name: 'Budget', field_type: 'number' })
  const pipeline = await post('/pipelines', { name: 'Sales' })
  const stages = []
  for (const [position, name] of ['Lead', 'Proposal', 'Won'].entries()) stages.push(await post('/pipeline-stages', { pipeline_id: pipeline.id, name, position }))
  const products = []
  for (let i = 0; i < ROWS; i++) products.push(await post('/products', { name: `Seat ${i}`, sku: `SEAT-${i}`, price: 10 + i }))

  const deals: number[] = []
  const activities: number[] = []
  const contacts: number[] = []
  for (let i = 0; i < ROWS; i++) {
    const owner = members[i]
    const company = await post('/companies', { name: `Company ${i}`, owned_by_user_id: owner, custom_fields_by_name: { Budget: i } })
    const contact = await post('/contacts', { first_name: `Person ${i}`, last_name: 'Count', company_id: company.id, owned_by_user_id: owner })
    const deal = await post('/deals', {
      name: `Deal ${i}`, amount: 100 + i, currency: 'EUR', status: 'open', pipeline_id: pipeline.id,
      pipeline_stage_id: stages[i % 3].id, contact_id: contact.id, company_id: company.id, owned_by_user_id: owner
    })
    const activity = await post('/activities', {
      subject: `Call ${i}`, start_date: '2026-03-02', assigned_to_user_id: members[(i + 1) % ROWS],
      deal_id: deal.id, contact_id: contact.id, company_id: company.id, activity_type: 'call'
    })
    contacts.push(contact.id)
    deals.push(deal.id)
    activities.push(activity.id)
  }
  const bare = await post('/activities', { subject: 'Alone', activity_type: 'call' })

  await post('/deal-products', { deal_id: deals[0], product_id: products[0].id, quantity: 1, price: 10 })
  for (const product of products) await post('/deal-products', { deal_id: deals[1], product_id: product.id, quantity: 2, price: 10 })
  const demo = await post('/activity-types', { name: 'Demo', color: '#123456', icon_key: 'video' })
  const workshop = await post('/activity-types', { name: 'Workshop', color: '#654321', icon_key: 'users' })
  await post('/activities', { subject: 'Demo', activity_type: 'Demo' })
  for (let i = 0; i < 5; i++) await post('/activities', { subject: `Workshop ${i}`, activity_type: 'Workshop' })

  const board = await createBoard(t, tenant)
  const conversations: number[] = []
  for (let i = 0; i < ROWS; i++) {
    const conversation = await createConversation(t, tenant, {
      contact_id: contacts[i], assignee_user_ids: members.slice(0, 1 + (i % 4)), pipeline_id: board.pipeline.id, pipeline_stage_id: board.stages[i % 2].id
    })
    conversations.push(conversation.id)
  }

  const service = await post('/reservation-services', { name: 'Massage', duration_minutes: 60, max_advance_days: 400 })
  const resource = await resourceWithHours(t, tenant, { name: 'Therapist' }, [['09:00', '17:00']])
  await link(t, tenant, service.id, resource.id)
  const date = inDays(10)
  for (let i = 0; i < ROWS; i++) await post('/reservations', { service_id: service.id, contact_id: contacts[i], start_datetime: at(date, `${String(9 + i).padStart(2, '0')}:00`) })

  let invitation = 0
  for (let i = 0; i < ROWS; i++) invitation = (await post('/organizations-users-invites', { email: uniqueEmail('invited'), role: 'member' })).id
  for (let i = 0; i < ROWS; i++) {
    const uploaded = await t.http().post('/product-media').set(tenant.key).field('product_id', String(products[0].id)).attach('file', png(i + 1), { filename: `photo-${i}.png`, contentType: 'image/png' })
    body(uploaded, 'product media')
  }

  return {
    tenant,
    activities: { full: activities[0], bare: bare.id },
    deals: { oneProduct: deals[0], sixProducts: deals[1] },
    activityTypes: { oneActivity: demo.id, fiveActivities: workshop.id },
    conversations: { oneAssignee: conversations[0], fourAssignees: conversations[3] },
    invitation,
    product: products[0].id
  }
}
