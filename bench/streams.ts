/**
 * The requests the benchmark sends, as deterministic streams: a stream made twice from the same
 * seed yields the same requests in the same order, so the service and the bare server of a
 * comparison are asked exactly the same pages, records and writes.
 */
import type { BenchRequest } from './http.js'
import type { Fixtures } from './scenarios.js'
import { FIRST_NAMES, LAST_NAMES } from './seed.js'

export type Stream = () => BenchRequest
export type StreamFactory = (f: Fixtures, draw: Draw) => Stream

/** Seeded draws (mulberry32): small, fast and the same on every machine. */
export class Draw {
  private state: number

  constructor(seed: string) {
    // FNV-1a of the seed text, so that 'seed:group:round' strings give unrelated sequences.
    let hash = 0x811c9dc5
    for (let i = 0; i < seed.length; i++) hash = Math.imul(hash ^ seed.charCodeAt(i), 0x01000193)
    this.state = hash >>> 0
  }

  /** A number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  int(below: number): number {
    return Math.floor(this.next() * below)
  }

  pick<T>(values: ArrayLike<T>): T {
    return values[this.int(values.length)]
  }
}

/** One write in this many requests of a realistic mix. */
export const WRITE_EVERY = 20

/**
 * Name-search terms as people type them: pieces of 3 to 8 letters of the seeded names, a fifth
 * of them 3 letters, as written (accents and capitals included: search folds both), the same
 * list on every run. Most start a name; some are cut from inside one.
 */
export const SEARCH_TERMS: string[] = (() => {
  const draw = new Draw('search terms')
  const names = [...FIRST_NAMES, ...LAST_NAMES].filter((name) => name.length >= 3)
  return Array.from({ length: 60 }, (_, index) => {
    const name = draw.pick(names)
    const length = index % 5 === 0 ? 3 : Math.min(name.length, 4 + draw.int(5))
    const start = draw.int(4) === 0 ? draw.int(name.length - length + 1) : 0
    const term = name.slice(start, start + length)
    return draw.int(3) === 0 ? term : term.toLowerCase()
  })
})()

/** The marker of the contacts the benchmark creates: database.ts removes them before each run. */
export const CREATED_EMAIL_PREFIX = 'bench.created.'

const key = (f: Fixtures) => ({ 'x-api-key': f.seed.large.apiKey })

/** The organization a stream asks about: its id, its API key and its live contacts. */
export interface Tenant {
  organizationId: number
  apiKey: string
  contactIds: Int32Array
}

/** The seed's large organization, the one most streams ask about. */
export const largeOrganization = (f: Fixtures): Tenant => ({ organizationId: f.organizationId, apiKey: f.seed.large.apiKey, contactIds: f.contactIds })

/** A contact as a person types it in: a seeded-looking name, an e-mail, a company of the organization. */
function newContact(f: Fixtures, draw: Draw) {
  return {
    first_name: draw.pick(FIRST_NAMES),
    last_name: draw.pick(LAST_NAMES),
    email: `${CREATED_EMAIL_PREFIX}${draw.int(1e9)}@example.com`,
    company_id: draw.pick(f.companyIds)
  }
}

export const contactById = (tenant: (f: Fixtures) => Tenant): StreamFactory => (f, draw) => {
  const { contactIds, apiKey } = tenant(f)
  return () => ({ method: 'GET', path: `/contacts/${draw.pick(contactIds)}`, headers: { 'x-api-key': apiKey } })
}

export const getContact = contactById(largeOrganization)

export const createContact: StreamFactory = (f, draw) => () => ({ method: 'POST', path: '/contacts', headers: key(f), body: newContact(f, draw) })

export const createContacts = (size: number): StreamFactory => (f, draw) => () =>
  ({ method: 'POST', path: '/contacts', headers: key(f), body: Array.from({ length: size }, () => newContact(f, draw)) })

/** A rename: the name is one of the seeded ones, so that name searches keep finding what they found. */
export const updateContact: StreamFactory = (f, draw) => () =>
  ({ method: 'PATCH', path: `/contacts/${draw.pick(f.contactIds)}`, headers: key(f), body: { last_name: draw.pick(LAST_NAMES) } })

/** A name search of one term. */
export const nameSearch = (tenant: Tenant, searchTerm: string): BenchRequest => ({
  method: 'POST', path: '/contacts', headers: { 'x-api-key': tenant.apiKey, 'x-service-method': 'search' },
  body: { organization_id: tenant.organizationId, searchIn: 'name', searchTerm }
})

export const searchesOf = (tenant: (f: Fixtures) => Tenant): StreamFactory => (f, draw) => {
  const asked = tenant(f)
  return () => nameSearch(asked, draw.pick(SEARCH_TERMS))
}

export const searchContacts = searchesOf(largeOrganization)

/** The orders a contact list has an index for. */
const INDEXED_ORDERS = ['last_name', 'first_name', 'email', 'created_at', 'updated_at']

/** Pages of 25 contacts in an indexed order, either way, `$skip` 0 to 500: a page a person reads near the top of a list. */
export const sortedContactPages = (tenant: (f: Fixtures) => Tenant): StreamFactory => (f, draw) => {
  const { organizationId, apiKey } = tenant(f)
  return () => ({
    method: 'GET', path: '/contacts', headers: { 'x-api-key': apiKey },
    body: { query: { organization_id: organizationId, $sort: { [draw.pick(INDEXED_ORDERS)]: draw.pick([1, -1]) }, $limit: 25, $skip: 25 * draw.int(21) } }
  })
}

/**
 * A page somewhere in `rows` records: the page number is log-uniform over all pages, so every
 * page can come up but the first ones come up most, as people read lists. (A uniform $skip would
 * make the average request an OFFSET over half the organization, a measure of Postgres alone.)
 */
function pageSkip(draw: Draw, rows: number, limit: number) {
  const pages = Math.max(1, Math.ceil(rows / limit))
  const page = Math.floor(Math.exp(draw.next() * Math.log(pages + 1))) - 1
  return Math.min(page, pages - 1) * limit
}

/** The expected rows of a filter: the unfiltered size times each filtered value's share (none where no live row has it). */
function expectedRows(f: Fixtures, table: string, size: number, filters: Record<string, unknown>) {
  let rows = size
  for (const [column, value] of Object.entries(filters)) rows *= f.shares[`${table}.${column}`]?.get(String(value)) ?? 0
  return rows
}

/**
 * A realistic mix: pages of one list with varied filters, sorts and pages (never the same page
 * twice in a row) and every WRITE_EVERY-th request a write to the same table.
 */
function mix(read: (draw: Draw) => Record<string, unknown>, write: (draw: Draw) => BenchRequest, path: string, f: Fixtures, draw: Draw): Stream {
  let sent = 0
  let previous = ''
  return () => {
    sent++
    if (sent % WRITE_EVERY === 0) return write(draw)
    let query = read(draw)
    for (let attempt = 0; attempt < 10 && JSON.stringify(query) === previous; attempt++) query = read(draw)
    previous = JSON.stringify(query)
    return { method: 'GET', path, headers: key(f), body: { query } }
  }
}

/** Contact pages: sorted on an indexed column, a third of them filtered by owner or by a company that has contacts. */
export const contactsMix: StreamFactory = (f, draw) => {
  const companies = [...f.shares['contacts.company_id'].keys()].filter((id) => id !== null).map(Number).sort((a, b) => a - b)
  const read = (d: Draw) => {
    const r = d.next()
    const filters = r < 0.7 ? {} : r < 0.9 ? { owned_by_user_id: d.pick(f.userIds) } : { company_id: d.pick(companies) }
    const $limit = d.pick([10, 20, 50])
    const $sort = d.pick([{ created_at: -1 }, { created_at: 1 }, { id: 1 }, { id: -1 }])
    return { organization_id: f.organizationId, ...filters, $sort, $limit, $skip: pageSkip(d, expectedRows(f, 'contacts', f.sizes.contacts, filters), $limit) }
  }
  const write = (d: Draw) => (d.next() < 0.5 ? createContact(f, d)() : updateContact(f, d)())
  return mix(read, write, '/contacts', f, draw)
}

/** Deal pages of 50 with their relations, filtered as a pipeline board or an owner's list would be; the write a new amount. */
export const dealsMix: StreamFactory = (f, draw) => {
  const read = (d: Draw) => {
    const r = d.next()
    const filters = r < 0.4 ? {} : r < 0.7 ? { status: d.pick(['open', 'won', 'lost']) } : r < 0.85 ? { pipeline_id: d.pick(f.pipelineIds) } : { owned_by_user_id: d.pick(f.userIds) }
    const $sort = d.pick([{ created_at: -1 }, { created_at: 1 }, { expected_close_date: 1 }, { expected_close_date: -1 }, { id: -1 }])
    return {
      organization_id: f.organizationId, ...filters, fastJoinForDealsList: true, $sort, $limit: 50,
      $skip: pageSkip(d, expectedRows(f, 'deals', f.sizes.deals, filters), 50)
    }
  }
  const write = (d: Draw): BenchRequest => ({ method: 'PATCH', path: `/deals/${d.pick(f.dealIds)}`, headers: key(f), body: { amount: d.int(10_000_000) / 100 } })
  return mix(read, write, '/deals', f, draw)
}

/** A random week of activities with their relations, 50 a page, at times narrowed to one person, type or state; the write ticks one done. */
export const activitiesMix: StreamFactory = (f, draw) => {
  const read = (d: Draw) => {
    const first = d.int(Math.max(1, f.activityDays.length - 6))
    const week = f.activityDays.slice(first, first + 7)
    const r = d.next()
    const filters = r < 0.5 ? {} : r < 0.7 ? { done: d.next() < 0.5 } : r < 0.85 ? { activity_type: d.pick(f.activityTypes) } : { assigned_to_user_id: d.pick(f.userIds) }
    const $sort = d.pick([{ start_date: 1 }, { start_date: -1 }, { start_time: 1 }, { subject: 1 }, { id: -1 }])
    const rows = expectedRows(f, 'activities', week.reduce((sum, day) => sum + day.activities, 0), filters)
    return {
      organization_id: f.organizationId, start_date: { $gte: week[0].date, $lte: week[week.length - 1].date }, ...filters,
      fastJoinForActivityList: true, $sort, $limit: 50, $skip: pageSkip(d, rows, 50)
    }
  }
  const write = (d: Draw): BenchRequest => ({ method: 'PATCH', path: `/activities/${d.pick(f.activityIds)}`, headers: key(f), body: { done: d.next() < 0.5 } })
  return mix(read, write, '/activities', f, draw)
}

// Scenarios outside the default set (run them with --only).

export const completeActivities: StreamFactory = (f, draw) => () => ({
  method: 'PATCH', path: '/activities', headers: key(f),
  body: { ids: [...new Set(Array.from({ length: 100 }, () => draw.pick(f.activityIds)))], done: draw.next() < 0.5 }
})

export const openInbox: StreamFactory = (f) => () => ({
  method: 'GET', path: '/conversations', headers: key(f),
  body: { query: { organization_id: f.organizationId, status: 'open', $sort: { last_message_at: -1 }, fastJoinForConversationList: true, $limit: 50 } }
})

export const conversationThread: StreamFactory = (f, draw) => () => ({
  method: 'GET', path: '/conversation-messages-whatsapp', headers: key(f),
  body: { query: { organization_id: f.organizationId, conversation_id: draw.pick(f.whatsappConversationIds), $sort: { created_at: -1 }, $limit: 50 } }
})

export const syncPage: StreamFactory = (f, draw) => () => ({
  method: 'GET', path: '/contacts', headers: key(f),
  body: {
    query: {
      organization_id: f.organizationId, $withDeleted: true, $limit: 100, $sort: { updated_at: 1, id: 1 },
      $after: { updated_at: draw.pick(f.contactUpdatedAts), id: draw.pick(f.contactIds) }
    }
  }
})

export const getCompany: StreamFactory = (f, draw) => () => ({ method: 'GET', path: `/companies/${draw.pick(f.companyIds)}`, headers: key(f) })
