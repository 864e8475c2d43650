import crypto from 'node:crypto'
import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { DateTime } from 'luxon'
import { createApp } from './app.js'
import { migrate } from './db.js'
import type { Application } from './declarations.js'
import { totalOf } from './lib/money.js'
import { exitOnStartupError } from './startup.js'
import { asApiKey, createApiKey, createOwnedOrganization, refusalAsOneLine } from './account-steps.js'

// `npm run seed`: a demo owner and organization with data in every part of the API (companies
// and contacts with custom fields, a sales pipeline with deals and their products, this week's and
// next week's activities, an inbox with playground and web-chat threads, a bookable service), and
// an API key. Everything but the owner, the organization and the key is created through the
// services as the key's caller, so validation and hooks run as over HTTP. Run again, it finds
// the demo organization, says so and changes nothing.
const DEMO_EMAIL = process.env.SEED_EMAIL || 'demo@example.com'
const DEMO_ORGANIZATION = 'Demo Organization'

/** The demo owner: created with SEED_PASSWORD or a fresh one, or found (the password is then not known here). */
async function demoOwner(app: Application, db: Knex) {
  const existing = await db('users').whereRaw('lower(email) = ?', [DEMO_EMAIL.toLowerCase()]).first()
  if (existing) return { user: existing, password: undefined }
  const password = process.env.SEED_PASSWORD || crypto.randomBytes(9).toString('base64url')
  const user = await app.service('users').create({ email: DEMO_EMAIL, password, first_name: 'Demo', last_name: 'Owner' })
  return { user, password }
}

/** The demo organization the owner already owns, if any. */
const ownedDemoOrganization = (db: Knex, userId: number) =>
  db('organizations')
    .join('organizations_users', 'organizations_users.organization_id', 'organizations.id')
    .where({ 'organizations_users.user_id': userId, 'organizations_users.role': 'owner', 'organizations.name': DEMO_ORGANIZATION })
    .first('organizations.*')

const COMPANIES: [string, string, number, string][] = [
  ['Initech', 'Software', 120, 'initech.example'],
  ['Globex', 'Manufacturing', 850, 'globex.example'],
  ['Umbrella Health', 'Healthcare', 2300, 'umbrella.example'],
  ['Stark Logistics', 'Logistics', 410, 'starklogistics.example'],
  ['Wayne Foods', 'Retail', 95, 'waynefoods.example'],
  ['Hooli', 'Software', 5200, 'hooli.example'],
  ['Vandelay Imports', 'Logistics', 35, 'vandelay.example'],
  ['Soylent Kitchens', 'Retail', 60, 'soylent.example'],
  ['Cyberdyne Robotics', 'Manufacturing', 720, 'cyberdyne.example'],
  ['Tyrell Clinics', 'Healthcare', 180, 'tyrell.example']
]
const FIRST_NAMES = ['Ana', 'Bruno', 'Carmen', 'David', 'Elena', 'Farid', 'Greta', 'Hugo', 'Irene', 'Jonas', 'Keiko', 'Luis', 'Marta', 'Nora', 'Omar', 'Paula', 'Quentin', 'Rosa', 'Samir', 'Teresa', 'Ugo', 'Vera', 'Walter', 'Ximena', 'Yusuf', 'Zoe']
const LAST_NAMES = ['García', 'Müller', 'Rossi', 'Dubois', 'Novak', 'Silva', 'Kowalski', 'Jensen', 'Haddad', 'Okafor', 'Tanaka', 'Larsen', 'Moreau']
const TIERS = ['gold', 'silver', 'bronze']
const PRODUCTS: [string, string, number, number][] = [
  ['CRM licence (seat, yearly)', 'LIC-SEAT', 240, 21],
  ['Onboarding workshop', 'SRV-ONB', 1200, 21],
  ['Consulting day', 'SRV-DAY', 800, 21],
  ['Premium support (yearly)', 'SUP-PREM', 3000, 21],
  ['Data migration', 'SRV-MIG', 2500, 21],
  ['Training course (per person)', 'TRN-1', 150, 10]
]
const STAGES = ['Lead', 'Qualified', 'Proposal', 'Negotiation']
const ACTIVITY_SUBJECTS: [string, string][] = [
  ['call', 'Discovery call'],
  ['meeting', 'Requirements meeting'],
  ['email', 'Send the proposal'],
  ['Demo', 'Product demo'],
  ['task', 'Prepare the quote'],
  ['lunch', 'Lunch with the buyer'],
  ['deadline', 'Proposal deadline']
]
const THREADS: { content: string; inbound: string; reply: string }[] = [
  { content: 'Hello {name}, thanks for your interest in our plans. How can we help?', inbound: 'Can we add five more seats this month?', reply: 'Yes: I will send you the updated quote today.' },
  { content: 'Hi {name}, your onboarding workshop is confirmed for next week.', inbound: 'Great, can we move it to the afternoon?', reply: 'Done, 15:00 it is.' },
  { content: 'Hello {name}, did the data migration finish on your side?', inbound: 'Almost, two tables are missing.', reply: 'Send me their names and we will rerun them.' },
  { content: 'Hi {name}, your invoice for this quarter is ready.', inbound: 'Could you add our VAT number to it?', reply: 'Of course, a corrected invoice is on its way.' }
]

/**
 * Where the i-th demo deal stands: most are open, spread over the stages and closing in the weeks
 * ahead; two closed a few days ago, one won at the last stage and one lost at the proposal.
 */
function dealProgress(i: number, stages: { id: number }[], today: DateTime) {
  if (i === 12) return { status: 'won', stage: stages[stages.length - 1], closes: today.minus({ days: 3 }).toISODate() }
  if (i === 13) return { status: 'lost', stage: stages[STAGES.indexOf('Proposal')], closes: today.minus({ days: 5 }).toISODate() }
  return { status: 'open', stage: stages[i % stages.length], closes: today.plus({ days: 7 + i * 4 }).toISODate() }
}

/** Everything the demo organization holds, created as the key's caller (params). */
async function fillOrganization(app: Application, params: Params, userId: number) {
  const create = (path: string, data: unknown) => (app.service(path as any) as any).create(data, { ...params })
  const patch = (path: string, id: number, data: unknown) => (app.service(path as any) as any).patch(id, data, { ...params })

  // Custom fields of companies, contacts and deals.
  for (const field of [
    { entity_type: 'company', key: 'segment', name: 'Segment', field_type: 'select', options: ['SMB', 'Mid-market', 'Enterprise'] },
    { entity_type: 'company', key: 'employees', name: 'Employees', field_type: 'number' },
    { entity_type: 'contact', key: 'tier', name: 'Tier', field_type: 'select', options: TIERS },
    { entity_type: 'contact', key: 'newsletter', name: 'Newsletter', field_type: 'boolean' },
    { entity_type: 'deal', key: 'source', name: 'Source', field_type: 'select', options: ['Website', 'Referral', 'Event', 'Outbound'] }
  ]) {
    await create('custom-fields', field)
  }

  const companies: any[] = await create(
    'companies',
    COMPANIES.map(([name, industry, employees, domain]) => ({
      name,
      industry,
      website: `https://${domain}`,
      custom_fields_by_name: { Segment: employees < 100 ? 'SMB' : employees < 1000 ? 'Mid-market' : 'Enterprise', Employees: employees }
    }))
  )
  const contacts: any[] = await create(
    'contacts',
    Array.from({ length: 60 }, (_, i) => {
      const company = companies[i % companies.length]
      const first_name = FIRST_NAMES[i % FIRST_NAMES.length]
      const last_name = LAST_NAMES[(i * 7) % LAST_NAMES.length]
      const domain = COMPANIES[i % COMPANIES.length][3]
      return {
        first_name,
        last_name,
        email: `${first_name}.${i + 1}@${domain}`.toLowerCase().normalize('NFD').replace(/[\u0300-\u036f]/g, ''),
        phone: `+34 6${String(10_000_000 + i * 7_919).slice(0, 8)}`,
        phone_country_code: '+34',
        phone_country_iso: 'ES',
        company_id: company.id,
        owned_by_user_id: userId,
        custom_fields_by_name: { Tier: TIERS[i % TIERS.length], Newsletter: i % 2 === 0 }
      }
    })
  )

  const products: any[] = await create(
    'products',
    PRODUCTS.map(([name, sku, price, tax_percentage]) => ({ name, sku, price, currency: 'EUR', tax_percentage }))
  )
  const sales = await create('pipelines', { name: 'Sales', type: 'deal' })
  const stages: any[] = []
  for (const [position, name] of STAGES.entries()) {
    stages.push(await create('pipeline-stages', { pipeline_id: sales.id, name, position, probability: [10, 30, 60, 80][position] }))
  }
  const today = DateTime.utc().startOf('day')
  const companyNames = new Map(companies.map((company) => [company.id, company.name]))
  const deals: any[] = await create(
    'deals',
    Array.from({ length: 15 }, (_, i) => {
      const contact = contacts[i * 3]
      const { status, stage, closes } = dealProgress(i, stages, today)
      return {
        name: `${companyNames.get(contact.company_id)}: ${['new seats', 'renewal', 'onboarding', 'migration', 'support upgrade'][i % 5]}`,
        amount: 0,
        currency: 'EUR',
        status,
        pipeline_id: sales.id,
        pipeline_stage_id: stage.id,
        contact_id: contact.id,
        company_id: contact.company_id,
        expected_close_date: closes,
        custom_fields_by_name: { Source: ['Website', 'Referral', 'Event', 'Outbound'][i % 4] }
      }
    })
  )
  // One to three products per deal, with a percentage or a fixed discount on some lines.
  const lines = deals.flatMap((deal, i) =>
    Array.from({ length: 1 + (i % 3) }, (_, j) => {
      const product = products[(i + j * 2) % products.length]
      const discount =
        (i + j) % 3 === 0
          ? { discount_type: 'percentage', discount_percentage: 5 + ((i * 5) % 20) }
          : (i + j) % 3 === 1
            ? { discount_type: 'fixed', discount_amount: 50 }
            : {}
      return { deal_id: deal.id, product_id: product.id, quantity: 1 + ((i + j) % 4), ...discount }
    })
  )
  const dealProducts: any[] = await create('deal-products', lines)
  // A deal's amount is what its lines add up to.
  for (const deal of deals) {
    const totals = dealProducts.filter((line) => line.deal_id === deal.id).map((line) => line.total_amount_without_tax)
    await patch('deals', deal.id, { amount: totalOf(totals) })
  }

  // Activities on the working days of this week and the next, on the deals still open.
  await create('activity-types', { name: 'Demo', color: '#3366FF', icon_key: 'video' })
  const monday = today.startOf('week')
  const openDeals = deals.filter((deal) => deal.status === 'open')
  await create(
    'activities',
    Array.from({ length: 20 }, (_, i) => {
      const [activity_type, subject] = ACTIVITY_SUBJECTS[i % ACTIVITY_SUBJECTS.length]
      const deal = openDeals[i % openDeals.length]
      const day = monday.plus({ days: Math.floor(i / 2) + (i >= 10 ? 2 : 0) })
      const hour = 9 + ((i * 3) % 8)
      return {
        subject: `${subject}: ${deal.name}`,
        activity_type,
        start_date: day.toISODate(),
        start_time: `${String(hour).padStart(2, '0')}:00`,
        end_time: `${String(hour).padStart(2, '0')}:45`,
        duration: 45,
        deal_id: deal.id,
        contact_id: deal.contact_id,
        assigned_to_user_id: userId,
        done: day < today
      }
    })
  )

  // The inbox: a conversation pipeline, a predefined reply, playground threads, web chat.
  const support = await create('pipelines', { name: 'Support', type: 'conversation' })
  const supportStages: any[] = []
  for (const [position, name] of ['New', 'In progress', 'Done'].entries()) {
    supportStages.push(await create('pipeline-stages', { pipeline_id: support.id, name, position }))
  }
  const thanks = await create('conversation-predefined-messages', {
    title: 'Thanks',
    shortcut: 'thanks',
    content: 'Thank you {{contact.first_name}}! {{user.first_name}} from {{organization.name}}'
  })
  const conversationIds: number[] = []
  for (const [i, thread] of THREADS.entries()) {
    const contact = contacts[i * 5]
    const opened = await create('conversation-messages-playground', { contact_id: contact.id, content: thread.content.replace('{name}', contact.first_name) })
    await create('conversation-messages-playground', { conversation_id: opened.conversation_id, direction: 'inbound', content: thread.inbound })
    await create('conversation-messages-playground', { conversation_id: opened.conversation_id, content: thread.reply })
    if (i === 0) await create('conversation-messages-playground', { conversation_id: opened.conversation_id, predefined_message_id: thanks.id })
    // The last thread ends with the customer's message: it stays unread.
    if (i === THREADS.length - 1) await create('conversation-messages-playground', { conversation_id: opened.conversation_id, direction: 'inbound', content: 'Thanks!' })
    conversationIds.push(opened.conversation_id)
  }
  const widget = await create('channel-accounts', {
    channel: 'webchat',
    name: 'Website chat',
    config: { allowed_origins: [], title: 'Chat with us', welcome_message: 'Hi! How can we help?' }
  })
  for (const [name, question, answer] of [
    ['Marie Visitor', 'Do you ship to Spain?', 'Yes, within three working days.'],
    ['Tom Visitor', 'Is there a free trial?', 'Yes: 30 days, no card needed.']
  ]) {
    const session = await app
      .service('public/webchat/:widgetToken/sessions' as any)
      .create({ name, email: `${name.split(' ')[0].toLowerCase()}.visitor@example.com` }, { route: { widgetToken: widget.widget_token }, headers: {} } as any)
    await app.service('public/webchat/messages' as any).create({ content: question }, { headers: { 'x-visitor-token': session.visitor_token } } as any)
    await create('conversation-messages-transform-outgoing-webchat', { conversation_id: session.conversation_id, content: answer })
    conversationIds.push(session.conversation_id)
  }
  for (const [i, id] of conversationIds.entries()) {
    await patch('conversations', id, { pipeline_id: support.id, pipeline_stage_id: supportStages[i % supportStages.length].id, assignee_user_ids: [userId] })
  }

  // Bookings: a service, the person who delivers it (weekdays 09:00-17:00), a public booking link.
  const consultation = await create('reservation-services', {
    name: 'Consultation',
    description: 'A 30-minute call about your plans',
    duration_minutes: 30,
    slot_interval_minutes: 30,
    price: 0,
    currency: 'EUR',
    max_advance_days: 60
  })
  const advisor = await create('reservation-resources', { name: 'Ana García', type: 'person' })
  await create('reservation-service-resources', { service_id: consultation.id, resource_id: advisor.id })
  for (let day = 1; day <= 5; day++) {
    await create('reservation-resource-availability', { resource_id: advisor.id, day_of_week: day, start_time: '09:00', end_time: '17:00' })
  }
  const link = await create('reservation-booking-links', {
    slug: `demo-${crypto.randomBytes(3).toString('hex')}`,
    name: 'Book a consultation',
    service_ids: [consultation.id],
    page_config: { title: 'Book a consultation' }
  })
  return { sales, support, link, companies: companies.length, contacts: contacts.length, deals: deals.length, conversations: conversationIds.length }
}

/** What the seed prints of the demo owner's password: the new one it made, never SEED_PASSWORD's. */
const shownPassword = (password: string | undefined) =>
  password === undefined ? 'unchanged (the one printed when this user was first seeded)' : process.env.SEED_PASSWORD ? 'the one in SEED_PASSWORD' : password

/** The base URL the printed links use: PUBLIC_URL, else this machine on PORT. */
const baseUrl = (app: Application) => app.get('publicUrl')?.replace(/\/$/, '') || `http://localhost:${app.get('port')}`

async function seed() {
  const app = await createApp()
  const db = app.get('knex')
  await migrate(db)
  const { user, password } = await demoOwner(app, db)
  const existing = await ownedDemoOrganization(db, user.id)
  if (existing) {
    console.log(
      [
        `The demo organization #${existing.id} "${existing.name}" exists already: nothing changed.`,
        `  login:    ${DEMO_EMAIL}`,
        `  password: ${shownPassword(password)}`,
        '  API key:  the one printed by the first seed (a new one: POST /api-keys after logging in)'
      ].join('\n')
    )
    await app.teardown()
    return
  }
  const started = performance.now()
  // The owner creates the organization and its key as over HTTP (a JWT), the rest is the key's.
  const organization = await createOwnedOrganization(app, user.id, DEMO_ORGANIZATION)
  const { key } = await createApiKey(app, user.id, organization.id, 'Seed key')
  const made = await fillOrganization(app, await asApiKey(app, key), user.id)

  const base = baseUrl(app)
  console.log(
    [
      `Demo organization #${organization.id} "${organization.name}": ${made.companies} companies, ${made.contacts} contacts, ${made.deals} deals, ${made.conversations} conversations (${Math.round(performance.now() - started)} ms)`,
      `  login:    ${DEMO_EMAIL}`,
      `  password: ${shownPassword(password)}`,
      `  API key:  ${key}`,
      '',
      'Try (with the service running):',
      `  ${base}/docs                                   the interactive reference (Authorize with the key)`,
      `  curl -H "x-api-key: ${key}" "${base}/contacts?fastJoinForContactList=true"`,
      `  curl -H "x-api-key: ${key}" "${base}/deals?pipeline_id=${made.sales.id}&fastJoinForDealsList=true"`,
      `  curl -H "x-api-key: ${key}" "${base}/conversations?pipeline_id=${made.support.id}"`,
      `  curl -g -H "x-api-key: ${key}" "${base}/activities?start_date[\\$gte]=${DateTime.utc().startOf('week').toISODate()}&\\$sort[start_date]=1"`,
      `  ${base}/public/booking-links/${made.link.slug}/page   the public booking page (no key)`
    ].join('\n')
  )
  // Teardown closes everything the app opened (the pool, and Redis connections when REDIS_URL is set).
  await app.teardown()
}

await seed().catch((error) => exitOnStartupError(refusalAsOneLine(error), process.env.DATABASE_URL))
