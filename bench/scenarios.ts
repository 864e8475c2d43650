import crypto from 'node:crypto'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import type { SeedSummary } from './seed.js'
import type { BenchRequest } from './http.js'

/** What a scenario needs to build random requests: ids and ranges of the large organization. */
export interface Fixtures {
  seed: SeedSummary
  contactIds: Int32Array
  companyIds: Int32Array
  activityIds: Int32Array
  /** WhatsApp conversations of the large organization (their messages are read on one path). */
  whatsappConversationIds: Int32Array
  firstActivityDate: string
  activityDays: number
  /** The distinct updated_at of the large organization's contacts (deleted ones included): where sync cursors fall. */
  contactUpdatedAts: string[]
}

export type ServerName = 'service' | 'baseline' | 'service without rate limit'

export interface Scenario {
  id: string
  title: string
  server: ServerName
  /** p99 target in ms, where the issue sets one. */
  p99TargetMs?: number
  /** Throughput target in 2xx answers per second, where the issue sets one. */
  minReqPerSec?: number
  /** Records each request writes, where scenarios compare writes per record (B-single, B-batch). */
  records?: number
  request: (f: Fixtures) => BenchRequest
}

// 3-4 letter pieces of the seeded names (folded: search is accent-insensitive).
const SEARCH_TERMS = ['ada', 'lov', 'turi', 'hop', 'mull', 'jose', 'garc', 'ivan', 'chen', 'sven', 'zoe', 'lind', 'knu', 'ritc', 'nune', 'wang', 'bjor', 'kim']

const randomOf = (ids: Int32Array) => ids[crypto.randomInt(ids.length)]

/** A random week of the large organization's activities with their relations (scenario 6). */
function weekOfActivities(f: Fixtures): BenchRequest {
  const from = addDays(f.firstActivityDate, crypto.randomInt(Math.max(1, f.activityDays - 7)))
  return {
    method: 'GET', path: '/activities', headers: key(f),
    body: { query: { organization_id: f.seed.large.organizationId, start_date: { $gte: from, $lte: addDays(from, 6) }, fastJoinForActivityList: true } }
  }
}

export const SCENARIOS: Scenario[] = [
  {
    id: '1', title: 'GET /contacts/:id', server: 'service',
    request: (f) => ({ method: 'GET', path: `/contacts/${randomOf(f.contactIds)}`, headers: key(f) })
  },
  {
    id: '1b', title: 'GET /contacts/:id (baseline: node:http + pg)', server: 'baseline',
    request: (f) => ({ method: 'GET', path: `/contacts/${randomOf(f.contactIds)}` })
  },
  {
    id: '2', title: 'GET /contacts, default page, filters in the GET body', server: 'service', p99TargetMs: 50,
    request: (f) => ({ method: 'GET', path: '/contacts', headers: key(f), body: { query: { organization_id: f.seed.large.organizationId } } })
  },
  {
    id: '3', title: 'GET /deals, fastJoinForDealsList, $limit 50', server: 'service', p99TargetMs: 50,
    request: (f) => ({
      method: 'GET', path: '/deals', headers: key(f),
      body: { query: { organization_id: f.seed.large.organizationId, fastJoinForDealsList: true, $limit: 50 } }
    })
  },
  {
    id: '4', title: 'POST /contacts search, searchIn name, 3-4 letters', server: 'service', p99TargetMs: 100, minReqPerSec: 300,
    request: (f) => ({
      method: 'POST', path: '/contacts', headers: { ...key(f), 'x-service-method': 'search' },
      body: { organization_id: f.seed.large.organizationId, searchIn: 'name', searchTerm: SEARCH_TERMS[crypto.randomInt(SEARCH_TERMS.length)] }
    })
  },
  {
    id: '5', title: 'POST /contacts (create)', server: 'service',
    request: (f) => {
      const n = crypto.randomInt(1_000_000_000)
      return {
        method: 'POST', path: '/contacts', headers: key(f),
        body: { first_name: 'Bench', last_name: `Created ${n}`, email: `bench.created.${n}@example.com`, company_id: randomOf(f.companyIds) }
      }
    }
  },
  {
    id: '6', title: 'GET /activities, one-week start_date range, fastJoinForActivityList', server: 'service', p99TargetMs: 50,
    request: (f) => weekOfActivities(f)
  },
  {
    // Scenario 6 while the organization's activities are written: each write moves their change
    // mark, so the pages kept (src/services/record-pages.ts) are read again. What a week costs
    // when pages cannot be kept.
    id: '6w', title: 'GET /activities as in 6, with 1 request in 50 a PATCH of one activity', server: 'service',
    request: (f) => crypto.randomInt(50) === 0
      ? { method: 'PATCH', path: `/activities/${randomOf(f.activityIds)}`, headers: key(f), body: { done: crypto.randomInt(2) === 1 } }
      : weekOfActivities(f)
  },
  {
    id: '7', title: 'PATCH /activities bulk done, 100 ids', server: 'service',
    request: (f) => ({
      method: 'PATCH', path: '/activities', headers: key(f),
      body: { ids: Array.from({ length: 100 }, () => randomOf(f.activityIds)).filter(unique), done: crypto.randomInt(2) === 1 }
    })
  },
  {
    id: 'C1', title: 'GET /conversations, open inbox, last_message_at desc, fastJoinForConversationList, $limit 50', server: 'service',
    request: (f) => ({
      method: 'GET', path: '/conversations', headers: key(f),
      body: { query: { organization_id: f.seed.large.organizationId, status: 'open', $sort: { last_message_at: -1 }, fastJoinForConversationList: true, $limit: 50 } }
    })
  },
  {
    id: 'C2', title: "GET /conversation-messages-whatsapp, a conversation's last 50 messages", server: 'service',
    request: (f) => ({
      method: 'GET', path: '/conversation-messages-whatsapp', headers: key(f),
      body: { query: { organization_id: f.seed.large.organizationId, conversation_id: randomOf(f.whatsappConversationIds), $sort: { created_at: -1 }, $limit: 50 } }
    })
  },
  {
    id: 'S1', title: 'GET /contacts, $withDeleted keyset page ($after a random cursor), $limit 100', server: 'service', p99TargetMs: 50,
    request: (f) => ({
      method: 'GET', path: '/contacts', headers: key(f),
      body: {
        query: {
          organization_id: f.seed.large.organizationId, $withDeleted: true, $limit: 100, $sort: { updated_at: 1, id: 1 },
          $after: { updated_at: f.contactUpdatedAts[crypto.randomInt(f.contactUpdatedAts.length)], id: randomOf(f.contactIds) }
        }
      }
    })
  },
  {
    id: 'B-single', title: 'POST /contacts, one contact per request', server: 'service', records: 1,
    request: (f) => ({ method: 'POST', path: '/contacts', headers: key(f), body: benchContact(f) })
  },
  {
    id: 'B-batch', title: 'POST /contacts, an array of 100 contacts per request', server: 'service', records: 100,
    request: (f) => ({ method: 'POST', path: '/contacts', headers: key(f), body: Array.from({ length: 100 }, () => benchContact(f)) })
  },
  {
    id: 'L-on', title: 'GET /companies/:id, rate limiter on', server: 'service',
    request: (f) => ({ method: 'GET', path: `/companies/${randomOf(f.companyIds)}`, headers: key(f) })
  },
  {
    id: 'L-off', title: 'GET /companies/:id, rate limiter off', server: 'service without rate limit',
    request: (f) => ({ method: 'GET', path: `/companies/${randomOf(f.companyIds)}`, headers: key(f) })
  }
]

const key = (f: Fixtures) => ({ 'x-api-key': f.seed.large.apiKey })
/** A contact as an import sends it: names, a unique e-mail, a company of the organization. */
const benchContact = (f: Fixtures) => {
  const n = crypto.randomInt(1_000_000_000)
  return { first_name: 'Bench', last_name: `Imported ${n}`, email: `bench.imported.${n}@example.com`, company_id: randomOf(f.companyIds) }
}
const unique = <T>(value: T, index: number, all: T[]) => all.indexOf(value) === index
const addDays = (date: string, days: number) => new Date(Date.parse(date + 'T00:00:00Z') + days * 86_400_000).toISOString().slice(0, 10)


export async function loadFixtures(db: Knex, scale: number): Promise<Fixtures> {
  const seedSummary: SeedSummary = (await db.raw('SELECT summary FROM bench_seed WHERE scale = ?', [scale])).rows[0].summary
  const organizationId = seedSummary.large.organizationId
  const ids = async (table: string) =>
    Int32Array.from(
      (await db.raw(`SELECT id FROM ${table} WHERE organization_id = ? AND deleted_at IS NULL`, [organizationId])).rows.map((r: { id: number }) => r.id)
    )
  const range = (await db.raw(
    'SELECT min(start_date) AS first, max(start_date) - min(start_date) AS days FROM activities WHERE organization_id = ? AND deleted_at IS NULL',
    [organizationId]
  )).rows[0]
  return {
    seed: seedSummary,
    contactIds: await ids('contacts'),
    companyIds: await ids('companies'),
    activityIds: await ids('activities'),
    whatsappConversationIds: Int32Array.from(
      (await db.raw(`SELECT id FROM conversations WHERE organization_id = ? AND channel = 'whatsapp' AND deleted_at IS NULL`, [organizationId]))
        .rows.map((r: { id: number }) => r.id)
    ),
    firstActivityDate: range.first,
    activityDays: Number(range.days),
    contactUpdatedAts: (await db.raw('SELECT DISTINCT updated_at FROM contacts WHERE organization_id = ?', [organizationId]))
      .rows.map((r: { updated_at: Date }) => r.updated_at.toISOString())
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
    // The batch record budget too: B-batch writes thousands of records a second.
    BATCH_RECORDS_PER_HOUR: '1000000000'
  }
}

/** autocannon on one scenario: a fresh random request per call, no pipelining. */
export function loadScenario(url: string, scenario: Scenario, fixtures: Fixtures, seconds: number, connections: number): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections,
    pipelining: 1,
    duration: seconds,
    requests: [
      {
        setupRequest: (request: any) => {
          const next = scenario.request(fixtures)
          const body = next.body === undefined ? undefined : JSON.stringify(next.body)
          return {
            ...request,
            method: next.method,
            path: next.path,
            headers: { ...next.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
            body
          }
        }
      }
    ]
  })
}
