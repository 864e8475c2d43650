/**
 * The benchmark: `npm run bench -- [--scale 1] [--duration 15] [--warmup 3] [--connections 50]
 * [--only 1,2,L] [--reseed] [--verbose]`. Needs DATABASE_URL (a Postgres server); works in its
 * own database (BENCH_DATABASE, default crm_bench) on that server. See docs/performance.md.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import { createKnex, migrate } from '../src/db.js'
import { seed } from './seed.js'
import type { SeedSummary } from './seed.js'
import { send } from './http.js'
import type { BenchRequest } from './http.js'
import { startServer } from './processes.js'
import type { Server } from './processes.js'
import { explainScenarios } from './explain.js'
import type { ExplainFinding } from './explain.js'

const { values: flags } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    duration: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string' },
    reseed: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false }
  }
})
const scale = Number(flags.scale)
const duration = Number(flags.duration)
const warmup = Number(flags.warmup)
const connections = Number(flags.connections)
const only = flags.only?.split(',').map((s) => s.trim())

const log = (message: string) => process.stderr.write(message + '\n')
const RESULTS = 'bench/results'
// The service inherits REDIS_URL: with it the limiter runs on Redis, as in production.
const LIMITER_STORE = process.env.REDIS_URL ? 'Redis' : 'the in-process store'

/** What a scenario needs to build random requests: ids and ranges of the large organization. */
interface Fixtures {
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

type ServerName = 'service' | 'baseline' | 'service without rate limit'

interface Scenario {
  id: string
  title: string
  server: ServerName
  /** p99 target in ms, where the issue sets one. */
  p99TargetMs?: number
  request: (f: Fixtures) => BenchRequest
}

// 3-4 letter pieces of the seeded names (folded: search is accent-insensitive).
const SEARCH_TERMS = ['ada', 'lov', 'turi', 'hop', 'mull', 'jose', 'garc', 'ivan', 'chen', 'sven', 'zoe', 'lind', 'knu', 'ritc', 'nune', 'wang', 'bjor', 'kim']

const randomOf = (ids: Int32Array) => ids[crypto.randomInt(ids.length)]

const SCENARIOS: Scenario[] = [
  {
    id: '1', title: 'GET /contacts/:id', server: 'service', p99TargetMs: 25,
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
    id: '3', title: 'GET /deals, fastJoinForDealsList, $limit 50', server: 'service', p99TargetMs: 25,
    request: (f) => ({
      method: 'GET', path: '/deals', headers: key(f),
      body: { query: { organization_id: f.seed.large.organizationId, fastJoinForDealsList: true, $limit: 50 } }
    })
  },
  {
    id: '4', title: 'POST /contacts search, searchIn name, 3-4 letters', server: 'service', p99TargetMs: 25,
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
    id: '6', title: 'GET /activities, one-week start_date range, fastJoinForActivityList', server: 'service', p99TargetMs: 25,
    request: (f) => {
      const from = addDays(f.firstActivityDate, crypto.randomInt(Math.max(1, f.activityDays - 7)))
      return {
        method: 'GET', path: '/activities', headers: key(f),
        body: { query: { organization_id: f.seed.large.organizationId, start_date: { $gte: from, $lte: addDays(from, 6) }, fastJoinForActivityList: true } }
      }
    }
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
    id: 'L-on', title: 'GET /companies/:id, rate limiter on', server: 'service',
    request: (f) => ({ method: 'GET', path: `/companies/${randomOf(f.companyIds)}`, headers: key(f) })
  },
  {
    id: 'L-off', title: 'GET /companies/:id, rate limiter off', server: 'service without rate limit',
    request: (f) => ({ method: 'GET', path: `/companies/${randomOf(f.companyIds)}`, headers: key(f) })
  }
]

const key = (f: Fixtures) => ({ 'x-api-key': f.seed.large.apiKey })
const unique = <T>(value: T, index: number, all: T[]) => all.indexOf(value) === index
const addDays = (date: string, days: number) => new Date(Date.parse(date + 'T00:00:00Z') + days * 86_400_000).toISOString().slice(0, 10)

interface Row {
  id: string
  title: string
  server: ServerName
  ran: boolean
  note?: string
  reqPerSec?: number
  p50Ms?: number
  p99Ms?: number
  non2xx?: number
  errors?: number
  requests?: number
  p99TargetMs?: number
  /** Measurement rounds merged into this row (2 for the compared pairs). */
  rounds?: number
  /** The service's peak RSS once this scenario had run. */
  rssMb?: number
}

async function main() {
  const adminUrl = process.env.DATABASE_URL
  if (!adminUrl) throw new Error('Set DATABASE_URL to a Postgres server (the benchmark creates its own database there).')
  const benchUrl = await prepareDatabase(adminUrl, process.env.BENCH_DATABASE || 'crm_bench')
  const db = await createKnex(benchUrl, './data', 2)
  let servers: Partial<Record<ServerName, Server>> = {}
  try {
    const fixtures = await loadFixtures(db)
    log(`Large organization ${fixtures.seed.large.organizationId}: ${JSON.stringify(fixtures.seed.large.rows)}`)
    // --only 1 also takes 1b (its baseline), --only L takes L-on and L-off.
    const scenarios = SCENARIOS.filter((s) => !only || only.some((o) => s.id === o || (s.id.startsWith(o) && /^\D/.test(s.id.slice(o.length)))))

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-bench-'))
    const serviceEnv: NodeJS.ProcessEnv = {
      DATABASE_URL: benchUrl,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
      AUTH_SECRET: crypto.randomBytes(32).toString('hex'),
      // On, with a budget no run can spend; a 10 s window keeps the sliding log small.
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_POINTS: '100000000',
      RATE_LIMIT_WINDOW_S: '10',
      // With Redis, a fresh key space per run, so no earlier run's log counts.
      RATE_LIMIT_PREFIX: `crm-bench:${crypto.randomUUID()}:`
    }
    fs.mkdirSync(RESULTS, { recursive: true })
    const needs = new Set(scenarios.map((s) => s.server))
    if (needs.has('service')) {
      servers.service = await startServer('service', ['tsx', 'src/index.ts'], await freePort(), serviceEnv, '/health', `${RESULTS}/service.log`)
    }
    if (needs.has('service without rate limit')) {
      servers['service without rate limit'] = await startServer(
        'service without rate limit', ['tsx', 'src/index.ts'], await freePort(), { ...serviceEnv, RATE_LIMIT_ENABLED: 'false' },
        '/health', `${RESULTS}/service-without-rate-limit.log`
      )
    }
    if (needs.has('baseline')) {
      servers.baseline = await startServer(
        'baseline', ['tsx', 'bench/baseline.ts'], await freePort(),
        { DATABASE_URL: benchUrl, ORGANIZATION_ID: String(fixtures.seed.large.organizationId) },
        `/contacts/${fixtures.contactIds[0]}`, `${RESULTS}/baseline.log`
      )
    }

    const rows = await runAll(scenarios, servers, fixtures)
    const peakRssMb = servers.service?.peakRssMb()
    // Requests still queued for a database connection when the load stopped finish first.
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const limiterOffRssMb = servers['service without rate limit']?.peakRssMb()
    for (const server of Object.values(servers)) await server.stop()
    servers = {}

    let findings: ExplainFinding[] | undefined
    if (flags.verbose) {
      const probes = scenarios.filter((s) => s.server !== 'baseline').map((s) => ({ id: s.id, title: s.title, request: s.request(fixtures) }))
      findings = await explainScenarios(benchUrl, probes, log)
    }

    const postgres = (await db.raw('SHOW server_version')).rows[0].server_version as string
    const report = buildReport(rows, fixtures, peakRssMb, limiterOffRssMb, postgres, findings)
    process.stdout.write(report.markdown + '\n')
    fs.writeFileSync(`${RESULTS}/latest.json`, JSON.stringify(report.json, null, 2) + '\n')
    log(`Written to ${RESULTS}/latest.json`)
  } finally {
    for (const server of Object.values(servers)) await server.stop()
    await db.destroy()
  }
}

/** Creates and seeds the benchmark database, or reuses it when it was seeded at this scale. */
async function prepareDatabase(adminUrl: string, name: string) {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_DATABASE must be a plain identifier, got '${name}'`)
  const benchUrl = new URL(adminUrl)
  benchUrl.pathname = `/${name}`
  const admin = await createKnex(adminUrl, './data', 1)
  try {
    const exists = (await admin.raw('SELECT 1 FROM pg_database WHERE datname = ?', [name])).rows.length > 0
    let reusable = false
    if (exists && !flags.reseed) {
      const probe = await createKnex(benchUrl.toString(), './data', 1)
      try {
        const marker = await probe.raw(`SELECT summary FROM bench_seed WHERE scale = ?`, [scale]).catch(() => ({ rows: [] }))
        reusable = marker.rows.length > 0
      } finally {
        await probe.destroy()
      }
    }
    if (!reusable) {
      log(`Creating database ${name}`)
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.raw(`CREATE DATABASE ${name}`)
    } else {
      log(`Reusing database ${name} seeded at scale ${scale} (--reseed to start over)`)
    }
  } finally {
    await admin.destroy()
  }

  const db = await createKnex(benchUrl.toString(), './data', 2)
  try {
    const [, applied] = await migrate(db)
    if (applied.length) log(`Migrated: ${applied.join(', ')}`)
    const seeded = (await db.raw(`SELECT to_regclass('bench_seed') IS NOT NULL AS present`)).rows[0].present
    if (!seeded) {
      log(`Seeding at scale ${scale}`)
      const summary = await seed(db, scale, log)
      log(`Seeded in ${summary.seconds} s`)
      await db.raw('CREATE TABLE bench_seed (scale numeric PRIMARY KEY, summary jsonb NOT NULL)')
      await db.raw('INSERT INTO bench_seed VALUES (?, ?)', [scale, JSON.stringify(summary)])
    }
  } finally {
    await db.destroy()
  }
  return benchUrl.toString()
}

async function loadFixtures(db: Knex): Promise<Fixtures> {
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

/** Scenarios compared with each other (service and baseline, limiter on and off) alternate A B B A, so drift hits both. */
const PAIRS = [['1', '1b'], ['L-on', 'L-off']]

async function runAll(scenarios: Scenario[], servers: Partial<Record<ServerName, Server>>, fixtures: Fixtures) {
  const results = new Map<string, Row>()
  const run = async (scenario: Scenario) => {
    const row = await runScenario(scenario, servers[scenario.server]!, fixtures, results.get(scenario.id))
    row.rssMb = servers.service?.peakRssMb()
    results.set(scenario.id, row)
  }
  for (const scenario of scenarios) {
    if (results.has(scenario.id)) continue
    const pair = PAIRS.find((p) => p[0] === scenario.id)
    const partner = pair && scenarios.find((s) => s.id === pair[1])
    if (!partner) {
      await run(scenario)
      continue
    }
    for (const next of [scenario, partner, partner, scenario]) await run(next)
  }
  return scenarios.map((s) => results.get(s.id)!)
}

const warmed = new Set<Server>()

/**
 * A probe request first (a missing or failing endpoint is reported, not loaded), then a warm-up
 * and the measurement. A second round of the same scenario is merged into the first: requests
 * per second averaged, the worse p50 and p99 kept.
 */
async function runScenario(scenario: Scenario, server: Server, fixtures: Fixtures, previous?: Row): Promise<Row> {
  const base = { id: scenario.id, title: scenario.title, server: scenario.server, p99TargetMs: scenario.p99TargetMs }
  if (previous && !previous.ran) return previous
  if (!previous) {
    const probe = await send(server.url, scenario.request(fixtures)).catch((error: Error) => ({ status: 0, body: error.message }))
    if (probe.status < 200 || probe.status > 299) {
      const message = typeof probe.body === 'object' ? probe.body?.message : String(probe.body).slice(0, 80)
      log(`${scenario.id} ${scenario.title}: not run, the probe answered ${probe.status} ${message ?? ''}`)
      return { ...base, ran: false, note: `not run: probe answered ${probe.status}${message ? ` (${message})` : ''}` }
    }
    // A server's first scenario also warms up the server itself (JIT, pool, caches): three times longer.
    const seconds = warmed.has(server) ? warmup : warmup * 3
    warmed.add(server)
    if (seconds > 0) await load(server, scenario, fixtures, seconds)
  }
  log(`${scenario.id} ${scenario.title}: ${duration} s at ${connections} connections`)
  const result = await load(server, scenario, fixtures, duration)
  const row: Row = {
    ...base,
    ran: true,
    rounds: 1,
    reqPerSec: Math.round(result['2xx'] / result.duration),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    requests: result.requests.total
  }
  if (!previous) return row
  return {
    ...row,
    rounds: previous.rounds! + 1,
    reqPerSec: Math.round((previous.reqPerSec! * previous.rounds! + row.reqPerSec!) / (previous.rounds! + 1)),
    p50Ms: Math.max(previous.p50Ms!, row.p50Ms!),
    p99Ms: Math.max(previous.p99Ms!, row.p99Ms!),
    non2xx: previous.non2xx! + row.non2xx!,
    errors: previous.errors! + row.errors!,
    requests: previous.requests! + row.requests!
  }
}

function load(server: Server, scenario: Scenario, fixtures: Fixtures, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: server.url,
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

function buildReport(
  rows: Row[], fixtures: Fixtures, peakRssMb: number | undefined, limiterOffRssMb: number | undefined, postgres: string, findings?: ExplainFinding[]
) {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const ratio = ratioOf(byId.get('1'), byId.get('1b'))
  const limiterCost = ratioOf(byId.get('L-on'), byId.get('L-off'))
  const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits))

  const lines = [
    `Scale ${scale}: ${Object.entries(fixtures.seed.large.rows).map(([t, n]) => `${n.toLocaleString('en')} ${t}`).join(', ')} in the large organization; ${connections} connections, no pipelining, ${warmup} s warm-up, ${duration} s per scenario; rate limiter on ${LIMITER_STORE}.`,
    '',
    '| # | Scenario | req/s | p50 ms | p99 ms | p99 target | non-2xx | vs baseline | peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|'
  ]
  for (const row of rows) {
    if (!row.ran) {
      lines.push(`| ${row.id} | ${row.title} | ${row.note} | | | ${row.p99TargetMs ? `<= ${row.p99TargetMs}` : ''} | | | |`)
      continue
    }
    const vs = row.id === '1' && ratio !== undefined ? `${fmt(ratio * 100)} %` : ''
    lines.push(
      `| ${row.id} | ${row.title} | ${row.reqPerSec} | ${fmt(row.p50Ms)} | ${fmt(row.p99Ms)} | ${row.p99TargetMs ? `<= ${row.p99TargetMs}` : ''} | ${row.non2xx}${row.errors ? ` (+${row.errors} errors)` : ''} | ${vs} | ${row.server === 'service' ? row.rssMb ?? '' : ''} |`
    )
  }
  lines.push('')
  const paired = rows.filter((row) => (row.rounds ?? 1) > 1).map((row) => row.id)
  if (paired.length) lines.push(`${paired.join(', ')}: two rounds each in A B B A order; req/s is their mean, p50 and p99 the worse round.`)
  lines.push(`Service peak RSS (VmHWM): ${peakRssMb ?? 'n/a'} MB${limiterOffRssMb ? `; the instance without rate limiter: ${limiterOffRssMb} MB` : ''}.`)
  if (limiterCost !== undefined) lines.push(`Rate limiter cost on GET /companies/:id: ${fmt((1 - limiterCost) * 100, 1)} % of throughput.`)

  const targets = evaluateTargets(rows, ratio, limiterCost, peakRssMb)
  lines.push('', '| Target | Measured | Met |', '|---|---|---|')
  for (const t of targets) lines.push(`| ${t.target} | ${t.measured} | ${t.met === undefined ? 'not measured' : t.met ? 'yes' : 'NO'} |`)

  if (findings) {
    const flagged = findings.filter((f) => f.sequentialScans.length > 0)
    lines.push('', flagged.length === 0
      ? `EXPLAIN: no sequential scan on a large table in the ${findings.length} statements of the scenarios.`
      : `EXPLAIN: sequential scans on large tables in ${flagged.length} statement(s):`)
    for (const f of flagged) lines.push(`- scenario ${f.scenario}: Seq Scan on ${f.sequentialScans.join(', ')} — ${f.sql.slice(0, 160)}`)
  }

  const json = {
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryMb: Math.round(os.totalmem() / 2 ** 20), node: process.version, postgres },
    scale, durationS: duration, warmupS: warmup, connections, rateLimiterStore: LIMITER_STORE,
    seed: fixtures.seed,
    scenarios: rows,
    ratioToBaseline: ratio,
    rateLimiterCost: limiterCost === undefined ? undefined : 1 - limiterCost,
    peakRssMb, limiterOffRssMb,
    targets,
    explain: findings
  }
  return { markdown: lines.join('\n'), json }
}

const ratioOf = (a?: Row, b?: Row) => (a?.reqPerSec && b?.reqPerSec ? a.reqPerSec / b.reqPerSec : undefined)

function evaluateTargets(rows: Row[], ratio: number | undefined, limiterCost: number | undefined, peakRssMb: number | undefined) {
  const targets: { target: string; measured: string; met?: boolean }[] = []
  targets.push({
    target: 'GET /contacts/:id >= 50 % of the baseline',
    measured: ratio === undefined ? 'not run' : `${(ratio * 100).toFixed(0)} %`,
    met: ratio === undefined ? undefined : ratio >= 0.5
  })
  for (const row of rows.filter((r) => r.p99TargetMs)) {
    targets.push({
      target: `p99 <= ${row.p99TargetMs} ms: ${row.id} ${row.title}`,
      measured: row.ran ? `${row.p99Ms} ms` : 'not run',
      met: row.ran ? row.p99Ms! <= row.p99TargetMs! : undefined
    })
  }
  const ran = rows.filter((r) => r.ran && r.server !== 'baseline')
  const failures = ran.reduce((sum, r) => sum + (r.non2xx ?? 0) + (r.errors ?? 0), 0)
  targets.push({ target: 'zero non-2xx responses', measured: `${failures} in ${ran.length} scenarios`, met: ran.length ? failures === 0 : undefined })
  targets.push({ target: 'peak RSS <= 300 MB', measured: peakRssMb ? `${peakRssMb} MB` : 'n/a', met: peakRssMb ? peakRssMb <= 300 : undefined })
  targets.push({
    target: 'rate limiter costs < 10 % on GET /companies/:id',
    measured: limiterCost === undefined ? 'not run' : `${((1 - limiterCost) * 100).toFixed(1)} %`,
    met: limiterCost === undefined ? undefined : 1 - limiterCost < 0.1
  })
  return targets
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
