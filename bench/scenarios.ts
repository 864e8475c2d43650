import crypto from 'node:crypto'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import { autocannonRequest } from './http.js'
import type { SeedSummary } from './seed.js'
import { ACTIVITY_TYPES } from './seed.js'
import {
  Draw, activitiesMix, completeActivities, contactById, contactsMix, conversationThread, createContact, createContacts, dealsMix, getCompany, getContact,
  openInbox, searchContacts, searchesOf, sortedContactPages, syncPage, updateContact
} from './streams.js'
import type { StreamFactory, Tenant } from './streams.js'
import { idleAfterImport, searchAfterImport, searchTermsAlone } from './probes.js'
import type { Probe, ProbeContext } from './probes.js'
import { loadScaleOrganizations } from './scale.js'
import type { ScaleOrganizations } from './scale.js'
import { idleAfter } from './idle.js'

/** What the streams draw from: ids, sizes and value shares of the large organization. */
export interface Fixtures {
  seed: SeedSummary
  organizationId: number
  /** The user of the organization's API key: the creator of what the service creates. */
  keyUserId: number
  userIds: number[]
  pipelineIds: number[]
  activityTypes: string[]
  contactIds: Int32Array
  companyIds: Int32Array
  dealIds: Int32Array
  activityIds: Int32Array
  whatsappConversationIds: Int32Array
  /** Every day from the first activity to the last, with its live activities. */
  activityDays: { date: string; activities: number }[]
  /** The distinct updated_at of the organization's contacts (deleted ones included): where sync cursors fall. */
  contactUpdatedAts: string[]
  sizes: { contacts: number; deals: number }
  /** 'table.column' to each value's share of the live rows, for a filtered list's expected size. */
  shares: Record<string, Map<string, number>>
  /** The organizations of 10,000 and 100,000 contacts, once a run of the scale group has made them. */
  scale?: ScaleOrganizations
}

export type ServerName = 'service' | 'bare' | 'service without rate limit'

/** One measured load: a server and the stream of requests it is sent. */
export interface Side {
  id: string
  title: string
  server: ServerName
  stream: StreamFactory
  /** The bare server's path for the service's, where the bare server writes somewhere else (the plain copy). */
  route?: (path: string) => string
  /** Records each request writes, where writes are compared per record. */
  records?: number
}

/**
 * Sides measured together, in A B … B A order over the rounds, each round with one stream seed
 * for all of them: sides with the same stream factory are sent the same requests.
 */
export interface Group {
  id: string
  sides: Side[]
  /** Not in the default set: run only when --only names it. */
  extra?: boolean
  /** Sides measured for half the run's duration (ratios of fast requests, kept short in a full run). */
  halfDuration?: boolean
  /** Before the group's first side: brings the database to the state its measurement needs. */
  prepare?: (context: ProbeContext) => Promise<void>
  /** A measurement of its own instead of loads (no sides): its findings go to the table as they are. */
  probe?: Probe
}

const toPlainCopy = (path: string) => path.replace(/^\/contacts/, '/plain-contacts')

/** A service side and a bare side, sent the same requests. */
function againstBare(id: string, title: string, stream: StreamFactory): Group {
  return { id, sides: [{ id, title, server: 'service', stream }, { id: `${id}-bare`, title: `bare: ${title}`, server: 'bare', stream }] }
}

export const GROUPS: Group[] = [
  {
    id: 'create',
    sides: [
      { id: 'create', title: 'POST /contacts', server: 'service', stream: createContact, records: 1 },
      { id: 'create-plain', title: 'bare INSERT into the plain copy', server: 'bare', stream: createContact, route: toPlainCopy, records: 1 },
      { id: 'create-contacts', title: 'bare INSERT into contacts', server: 'bare', stream: createContact, records: 1 },
      { id: 'batch', title: 'POST /contacts, an array of 100', server: 'service', stream: createContacts(100), records: 100 }
    ]
  },
  {
    id: 'update',
    sides: [
      { id: 'update', title: 'PATCH /contacts/:id', server: 'service', stream: updateContact },
      { id: 'update-plain', title: 'bare UPDATE of the plain copy', server: 'bare', stream: updateContact, route: toPlainCopy },
      { id: 'update-contacts', title: 'bare UPDATE of contacts', server: 'bare', stream: updateContact }
    ]
  },
  againstBare('get', 'GET /contacts/:id', getContact),
  againstBare('contacts-mix', 'contacts pages, 1 in 20 a write', contactsMix),
  againstBare('deals-mix', 'deals pages with joins, 1 in 20 a write', dealsMix),
  againstBare('activities-mix', 'activity weeks with joins, 1 in 20 a write', activitiesMix),
  { id: 'search', sides: [{ id: 'search', title: 'POST /contacts search, searchIn name, 3-8 letters', server: 'service', stream: searchContacts }] },
  { id: 'search-terms', sides: [], probe: searchTermsAlone },
  {
    id: 'scale',
    prepare: settledContacts,
    halfDuration: true,
    sides: [
      ...scaleSides('get', 'GET /contacts/:id', contactById),
      ...scaleSides('pages', 'GET /contacts, 25 in an indexed order, $skip to 500', sortedContactPages),
      ...scaleSides('search', 'POST /contacts search, searchIn name, 3-8 letters', searchesOf)
    ]
  },
  { id: 'search-after-import', sides: [], probe: searchAfterImport },
  { id: 'idle-after-import', sides: [], probe: idleAfterImport },
  { id: 'bulk-done', extra: true, sides: [{ id: 'bulk-done', title: 'PATCH /activities, done on 100 ids', server: 'service', stream: completeActivities }] },
  { id: 'inbox', extra: true, sides: [{ id: 'inbox', title: 'GET /conversations, open inbox, fastJoinForConversationList, $limit 50', server: 'service', stream: openInbox }] },
  { id: 'thread', extra: true, sides: [{ id: 'thread', title: "GET /conversation-messages-whatsapp, a conversation's last 50", server: 'service', stream: conversationThread }] },
  { id: 'sync', extra: true, sides: [{ id: 'sync', title: 'GET /contacts, $withDeleted keyset page, $limit 100', server: 'service', stream: syncPage }] },
  {
    id: 'limiter',
    extra: true,
    sides: [
      { id: 'limiter-on', title: 'GET /companies/:id, rate limiter on', server: 'service', stream: getCompany },
      { id: 'limiter-off', title: 'GET /companies/:id, rate limiter off', server: 'service without rate limit', stream: getCompany }
    ]
  }
]

export const SIDES = GROUPS.flatMap((group) => group.sides)

/** The same requests to the organization of 10,000 contacts and to the one of 100,000, side by side. */
function scaleSides(kind: string, title: string, stream: (tenant: (f: Fixtures) => Tenant) => StreamFactory): Side[] {
  const of = (size: keyof ScaleOrganizations) => (f: Fixtures) => {
    if (!f.scale) throw new Error('The scale organizations are made by a run of the scale group (npm run bench -- --only scale)')
    return f.scale[size]
  }
  return [
    { id: `scale-${kind}-10k`, title: `${title}, 10,000 contacts`, server: 'service', stream: stream(of('smaller')) },
    { id: `scale-${kind}-100k`, title: `${title}, 100,000 contacts`, server: 'service', stream: stream(of('larger')) }
  ]
}

/** Contacts as autovacuum keeps them (dead rows gone, statistics current), and the database idle (at most a minute). */
async function settledContacts({ db, databaseUrl }: ProbeContext) {
  await db.raw('VACUUM (ANALYZE) contacts')
  await idleAfter(db, databaseUrl, { since: Date.now(), quietMs: 2_000, maxMs: 60_000 })
}

/** A side's stream for one seed: its requests, routed to the bare server's paths where the side says so. */
export function streamOf(side: Side, fixtures: Fixtures, seed: string) {
  const next = side.stream(fixtures, new Draw(seed))
  return side.route ? () => { const request = next(); return { ...request, path: side.route!(request.path) } } : next
}

export async function loadFixtures(db: Knex, scale: number): Promise<Fixtures> {
  const seed: SeedSummary = (await db.raw('SELECT summary FROM bench_seed WHERE scale = ?', [scale])).rows[0].summary
  const organizationId = seed.large.organizationId
  const column = async (sql: string) => (await db.raw(sql, [organizationId])).rows.map((row: { v: any }) => row.v)
  const liveIds = async (table: string) => Int32Array.from(await column(`SELECT id AS v FROM ${table} WHERE organization_id = ? AND deleted_at IS NULL`))
  const shares: Record<string, Map<string, number>> = {}
  for (const [table, columns] of Object.entries({
    contacts: ['owned_by_user_id', 'company_id'], deals: ['status', 'pipeline_id', 'owned_by_user_id'], activities: ['done', 'activity_type', 'assigned_to_user_id']
  })) {
    for (const name of columns) {
      const { rows } = await db.raw(`SELECT ${name}::text AS value, count(*)::float / sum(count(*)) OVER () AS share FROM ${table} WHERE organization_id = ? AND deleted_at IS NULL GROUP BY 1`, [organizationId])
      shares[`${table}.${name}`] = new Map(rows.map((row: { value: string; share: number }) => [row.value, row.share]))
    }
  }
  const days: { date: string; activities: string }[] = (await db.raw(`
    SELECT d::date::text AS date, count(a.id) AS activities
    FROM (SELECT min(start_date) AS first, max(start_date) AS last FROM activities WHERE organization_id = ? AND deleted_at IS NULL) r
    CROSS JOIN generate_series(r.first, r.last, interval '1 day') d
    LEFT JOIN activities a ON a.organization_id = ? AND a.deleted_at IS NULL AND a.start_date = d::date
    GROUP BY 1 ORDER BY 1`, [organizationId, organizationId])).rows
  const contactIds = await liveIds('contacts')
  const dealIds = await liveIds('deals')
  return {
    seed,
    organizationId,
    keyUserId: (await column(`SELECT user_id AS v FROM api_keys WHERE organization_id = ? AND name = 'bench'`))[0],
    userIds: await column('SELECT user_id AS v FROM organizations_users WHERE organization_id = ? ORDER BY 1'),
    pipelineIds: await column('SELECT id AS v FROM pipelines WHERE organization_id = ? AND deleted_at IS NULL ORDER BY 1'),
    activityTypes: ACTIVITY_TYPES,
    contactIds,
    companyIds: await liveIds('companies'),
    dealIds,
    activityIds: await liveIds('activities'),
    whatsappConversationIds: Int32Array.from(await column(`SELECT id AS v FROM conversations WHERE organization_id = ? AND channel = 'whatsapp' AND deleted_at IS NULL`)),
    activityDays: days.map((day) => ({ date: day.date, activities: Number(day.activities) })),
    contactUpdatedAts: (await column('SELECT DISTINCT updated_at AS v FROM contacts WHERE organization_id = ? ORDER BY 1')).map((at: Date) => at.toISOString()),
    sizes: { contacts: contactIds.length, deals: dealIds.length },
    shares,
    scale: await loadScaleOrganizations(db, scale)
  }
}

/**
 * The environment of the service under load: API keys, LOG_LEVEL=warn, and the rate limiter on
 * with a budget no run can spend (a 10 s window keeps the sliding log small).
 */
export function serviceEnvironment(databaseUrl: string, dataDir: string): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    AUTH_SECRET: crypto.randomBytes(32).toString('hex'),
    RATE_LIMIT_ENABLED: 'true',
    RATE_LIMIT_POINTS: '100000000',
    RATE_LIMIT_WINDOW_S: '10',
    // With Redis, a fresh key space per run, so no earlier run's log counts.
    RATE_LIMIT_PREFIX: `crm-bench:${crypto.randomUUID()}:`,
    // The batch record budget too: batch creates write thousands of records a second.
    BATCH_RECORDS_PER_HOUR: '1000000000'
  }
}

/** autocannon on one side: the next request of its stream per call, no pipelining. */
export function loadScenario(
  url: string, side: Side, fixtures: Fixtures, seed: string, seconds: number, connections: number
): Promise<autocannon.Result> {
  const next = streamOf(side, fixtures, seed)
  return autocannon({ url, connections, pipelining: 1, duration: seconds, requests: [autocannonRequest(next)] })
}
