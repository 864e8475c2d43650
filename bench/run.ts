/**
 * The benchmark: `npm run bench -- [--scale 1] [--duration 15] [--warmup 3] [--connections 50]
 * [--only 1,2,L] [--reseed] [--verbose] [--service-dir DIR] [--before FILE] [--out FILE]`. Needs DATABASE_URL (a Postgres server); works in its
 * own database (BENCH_DATABASE, default crm_bench) on that server. See docs/performance.md.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import { createKnex, migrate } from '../src/db.js'
import { seed } from './seed.js'
import { send } from './http.js'
import { SCENARIOS, loadFixtures, loadScenario, serviceEnvironment } from './scenarios.js'
import type { Fixtures, Scenario, ServerName } from './scenarios.js'
import { benchDatabaseName, databaseCpuMs, databaseCpuSpentMs, freePort, serviceScript, startServer } from './processes.js'
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
    verbose: { type: 'boolean', default: false },
    // Another checkout of the service (e.g. main before a change): its src/ and migrations/ run.
    'service-dir': { type: 'string' },
    // The results JSON of an earlier run, printed as the before columns.
    before: { type: 'string' },
    out: { type: 'string' }
  }
})
const scale = Number(flags.scale)
const duration = Number(flags.duration)
const warmup = Number(flags.warmup)
const connections = Number(flags.connections)
const only = flags.only?.split(',').map((s) => s.trim())
const serviceDir = path.resolve(flags['service-dir'] ?? '.')
const before: { scenarios: Row[]; ratioToBaseline?: number; peakRssMb?: number; date?: string; serviceDir?: string } | undefined =
  flags.before ? JSON.parse(fs.readFileSync(flags.before, 'utf8')) : undefined

const log = (message: string) => process.stderr.write(message + '\n')
const RESULTS = 'bench/results'
// The service inherits REDIS_URL: with it the limiter runs on Redis, as in production.
const LIMITER_STORE = process.env.REDIS_URL ? 'Redis' : 'the in-process store'

interface Row {
  id: string
  title: string
  server: ServerName
  ran: boolean
  note?: string
  reqPerSec?: number
  p50Ms?: number
  p99Ms?: number
  /** autocannon's latency distribution of the run, in the JSON only (the shape of the tail). */
  latency?: { mean: number; p75: number; p90: number; p97_5: number; max: number }
  non2xx?: number
  errors?: number
  requests?: number
  p99TargetMs?: number
  /** Measurement rounds merged into this row (2 for the compared pairs). */
  rounds?: number
  /** The service's peak RSS once this scenario had run. */
  rssMb?: number
  /** The server's own CPU time (user + system) per request while measured, in ms. */
  cpuMsPerRequest?: number
  /** The Postgres processes' CPU per request while measured (a database on this machine only). */
  dbCpuMsPerRequest?: number
  minReqPerSec?: number
  /** Records written per request (write scenarios compared per record). */
  records?: number
}

async function main() {
  const adminUrl = process.env.DATABASE_URL
  if (!adminUrl) throw new Error('Set DATABASE_URL to a Postgres server (the benchmark creates its own database there).')
  const benchUrl = await prepareDatabase(adminUrl, benchDatabaseName())
  const db = await createKnex(benchUrl, './data', 2)
  let servers: Partial<Record<ServerName, Server>> = {}
  try {
    const fixtures = await loadFixtures(db, scale)
    log(`Large organization ${fixtures.seed.large.organizationId}: ${JSON.stringify(fixtures.seed.large.rows)}`)
    // --only 1 also takes 1b (its baseline), --only L takes L-on and L-off.
    const scenarios = SCENARIOS.filter((s) => !only || only.some((o) => s.id === o || (s.id.startsWith(o) && /^\D/.test(s.id.slice(o.length)))))

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-bench-'))
    const serviceEnv = serviceEnvironment(benchUrl, dataDir)
    fs.mkdirSync(RESULTS, { recursive: true })
    const needs = new Set(scenarios.map((s) => s.server))
    const logs = path.resolve(RESULTS)
    // The service starts as `npm start` does (built to dist/, then plain node), from its checkout.
    const script = needs.has('service') || needs.has('service without rate limit') ? serviceScript(serviceDir) : []
    const startService = async (name: ServerName, env: NodeJS.ProcessEnv, log: string) =>
      startServer(name, ['node', ...script], await freePort(), env, '/health', path.join(logs, log), serviceDir)
    if (needs.has('service')) servers.service = await startService('service', serviceEnv, 'service.log')
    if (needs.has('service without rate limit')) {
      servers['service without rate limit'] = await startService(
        'service without rate limit', { ...serviceEnv, RATE_LIMIT_ENABLED: 'false' }, 'service-without-rate-limit.log'
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
    if (flags.verbose && serviceDir === process.cwd()) {
      const probes = scenarios.filter((s) => s.server !== 'baseline').map((s) => ({ id: s.id, title: s.title, request: s.request(fixtures) }))
      findings = await explainScenarios(benchUrl, probes, log)
    }

    const postgres = (await db.raw('SHOW server_version')).rows[0].server_version as string
    const report = buildReport(rows, fixtures, peakRssMb, limiterOffRssMb, postgres, findings)
    process.stdout.write(report.markdown + '\n')
    const out = flags.out ?? `${RESULTS}/latest.json`
    fs.writeFileSync(out, JSON.stringify(report.json, null, 2) + '\n')
    log(`Written to ${out}`)
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
    const [, applied] = await migrate(db, path.join(serviceDir, 'migrations'))
    if (applied.length) log(`Migrated: ${applied.join(', ')}`)
    const seeded = (await db.raw(`SELECT to_regclass('bench_seed') IS NOT NULL AS present`)).rows[0].present
    if (seeded) {
      // Every run starts from the state autovacuum keeps a database in: the dead rows of earlier
      // runs' writes (scenario 7 updates ~300,000 activities a run) removed, the visibility map set
      // for index-only scans, the statistics current. Without it, on a server where autovacuum is
      // off (this project's CI machine), each run is slower than the one before it.
      const started = Date.now()
      await db.raw('VACUUM (ANALYZE)')
      log(`Vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    } else {
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

/** Scenarios compared with each other (service and baseline, limiter on and off) alternate A B B A, so drift hits both. */
const PAIRS = [['1', '1b'], ['L-on', 'L-off'], ['B-single', 'B-batch']]

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
  const base = { id: scenario.id, title: scenario.title, server: scenario.server, p99TargetMs: scenario.p99TargetMs, minReqPerSec: scenario.minReqPerSec, records: scenario.records }
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
  const cpuBefore = server.cpuMs()
  const dbBefore = databaseCpuMs(process.env.DATABASE_URL!)
  const result = await load(server, scenario, fixtures, duration)
  const cpuMsPerRequest = (server.cpuMs() - cpuBefore) / Math.max(result.requests.total, 1)
  const dbAfter = databaseCpuMs(process.env.DATABASE_URL!)
  const dbCpuMsPerRequest = dbBefore === undefined || dbAfter === undefined ? undefined : databaseCpuSpentMs(dbBefore, dbAfter) / Math.max(result.requests.total, 1)
  const row: Row = {
    ...base,
    ran: true,
    rounds: 1,
    reqPerSec: Math.round(result['2xx'] / result.duration),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    latency: { mean: result.latency.mean, p75: result.latency.p75, p90: result.latency.p90, p97_5: result.latency.p97_5, max: result.latency.max },
    non2xx: result.non2xx,
    errors: result.errors,
    requests: result.requests.total,
    cpuMsPerRequest,
    dbCpuMsPerRequest
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
    requests: previous.requests! + row.requests!,
    cpuMsPerRequest: (previous.cpuMsPerRequest! * previous.requests! + cpuMsPerRequest * row.requests!) / (previous.requests! + row.requests!),
    dbCpuMsPerRequest: previous.dbCpuMsPerRequest === undefined || dbCpuMsPerRequest === undefined
      ? undefined
      : (previous.dbCpuMsPerRequest * previous.requests! + dbCpuMsPerRequest * row.requests!) / (previous.requests! + row.requests!)
  }
}

function load(server: Server, scenario: Scenario, fixtures: Fixtures, seconds: number): Promise<autocannon.Result> {
  return loadScenario(server.url, scenario, fixtures, seconds, connections)
}

function buildReport(
  rows: Row[], fixtures: Fixtures, peakRssMb: number | undefined, limiterOffRssMb: number | undefined, postgres: string, findings?: ExplainFinding[]
) {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const ratio = ratioOf(byId.get('1'), byId.get('1b'))
  const limiterCost = ratioOf(byId.get('L-on'), byId.get('L-off'))
  const batchGain = perRecordRatio(byId.get('B-batch'), byId.get('B-single'))
  const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits))

  const workers = Number(process.env.WEB_CONCURRENCY ?? 1) || 1
  const previous = new Map(before?.scenarios.map((row) => [row.id, row]) ?? [])
  const beforeRatio = before?.ratioToBaseline
  const lines = [
    `Scale ${scale}: ${Object.entries(fixtures.seed.large.rows).map(([t, n]) => `${n.toLocaleString('en')} ${t}`).join(', ')} in the large organization; ${connections} connections, no pipelining, ${warmup} s warm-up, ${duration} s per scenario; rate limiter on ${LIMITER_STORE}; ${workers} worker${workers === 1 ? '' : 's'} (WEB_CONCURRENCY).`,
    ...(before ? ['', `Before: ${flags.before} (${before.date ?? 'undated'}${before.serviceDir ? `, service from ${before.serviceDir}` : ''}).`] : []),
    '',
    `| # | Scenario | target |${before ? ' req/s before |' : ''} req/s | p50 ms |${before ? ' p99 ms before |' : ''} p99 ms | non-2xx | CPU ms/req | DB CPU ms/req |${before ? ' vs baseline before |' : ''} vs baseline | peak RSS MB |`,
    `|---|---|---|${before ? '---:|' : ''}---:|---:|${before ? '---:|' : ''}---:|---:|---:|---:|${before ? '---:|' : ''}---:|---:|`
  ]
  const targetOf = (row: Row) =>
    [row.minReqPerSec ? `>= ${row.minReqPerSec} req/s` : '', row.p99TargetMs ? `p99 <= ${row.p99TargetMs} ms` : '', row.id === '1' ? '>= 70 % of 1b' : '']
      .filter(Boolean).join(', ')
  for (const row of rows) {
    const old = previous.get(row.id)
    const was = (value: string | number | undefined) => (before ? ` ${old?.ran ? value ?? '' : ''} |` : '')
    if (!row.ran) {
      lines.push(`| ${row.id} | ${row.title} | ${targetOf(row)} |${was(old?.reqPerSec)} ${row.note} | |${was(old?.p99Ms)} | | | | |${was('')} | |`)
      continue
    }
    const vs = row.id === '1' && ratio !== undefined ? `${fmt(ratio * 100)} %` : ''
    const vsBefore = row.id === '1' && beforeRatio !== undefined ? `${fmt(beforeRatio * 100)} %` : ''
    lines.push(
      `| ${row.id} | ${row.title} | ${targetOf(row)} |${was(old?.reqPerSec)} ${row.reqPerSec} | ${fmt(row.p50Ms)} |${was(old?.p99Ms)} ${fmt(row.p99Ms)} | ${row.non2xx}${row.errors ? ` (+${row.errors} errors)` : ''} | ${fmt(row.cpuMsPerRequest, 2)} | ${fmt(row.dbCpuMsPerRequest, 2)} |${was(vsBefore)} ${vs} | ${row.server === 'service' ? row.rssMb ?? '' : ''} |`
    )
  }
  lines.push('')
  lines.push('CPU ms/req: user + system CPU time of the server\'s node process(es) during the measured seconds, per request sent; unlike req/s it hardly depends on what else the machine runs.')
  lines.push('DB CPU ms/req: the same for every Postgres process of this machine (blank when DATABASE_URL names another host); the two together are what a request costs the machine, besides the load generator.')
  const paired = rows.filter((row) => (row.rounds ?? 1) > 1).map((row) => row.id)
  if (paired.length) lines.push(`${paired.join(', ')}: two rounds each in A B B A order; req/s is their mean, p50 and p99 the worse round.`)
  lines.push(`Service peak RSS (VmHWM): ${peakRssMb ?? 'n/a'} MB${limiterOffRssMb ? `; the instance without rate limiter: ${limiterOffRssMb} MB` : ''}.`)
  if (limiterCost !== undefined) lines.push(`Rate limiter cost on GET /companies/:id: ${fmt((1 - limiterCost) * 100, 1)} % of throughput.`)

  for (const row of rows.filter((r) => r.ran && r.records)) lines.push(`${row.id}: ${(row.reqPerSec! * row.records!).toLocaleString('en')} contacts created per second.`)
  if (before) lines.push(`Peak RSS before: ${before.peakRssMb ?? 'n/a'} MB.`)
  const targets = evaluateTargets(rows, ratio, limiterCost, peakRssMb, batchGain)
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
    scale, durationS: duration, warmupS: warmup, connections, rateLimiterStore: LIMITER_STORE, workers, serviceDir,
    seed: fixtures.seed,
    scenarios: rows,
    ratioToBaseline: ratio,
    rateLimiterCost: limiterCost === undefined ? undefined : 1 - limiterCost,
    batchCreatePerRecordGain: batchGain,
    peakRssMb, limiterOffRssMb,
    targets,
    explain: findings
  }
  return { markdown: lines.join('\n'), json }
}

const ratioOf = (a?: Row, b?: Row) => (a?.reqPerSec && b?.reqPerSec ? a.reqPerSec / b.reqPerSec : undefined)
/** How many times more records per second a writes than b. */
const perRecordRatio = (a?: Row, b?: Row) => (a?.reqPerSec && b?.reqPerSec ? (a.reqPerSec * a.records!) / (b.reqPerSec * b.records!) : undefined)

function evaluateTargets(rows: Row[], ratio: number | undefined, limiterCost: number | undefined, peakRssMb: number | undefined, batchGain?: number) {
  const targets: { target: string; measured: string; met?: boolean }[] = []
  targets.push({
    target: 'GET /contacts/:id >= 70 % of the baseline',
    measured: ratio === undefined ? 'not run' : `${(ratio * 100).toFixed(0)} %`,
    met: ratio === undefined ? undefined : ratio >= 0.7
  })
  for (const row of rows.filter((r) => r.minReqPerSec)) {
    targets.push({
      target: `>= ${row.minReqPerSec} req/s: ${row.id} ${row.title}`,
      measured: row.ran ? `${row.reqPerSec} req/s` : 'not run',
      met: row.ran ? row.reqPerSec! >= row.minReqPerSec! : undefined
    })
  }
  for (const row of rows.filter((r) => r.p99TargetMs)) {
    targets.push({
      target: `p99 <= ${row.p99TargetMs} ms: ${row.id} ${row.title}`,
      measured: row.ran ? (row.reqPerSec ? `${row.p99Ms} ms` : 'no 2xx answer') : 'not run',
      // A scenario that answered nothing has no latency to meet a target with.
      met: row.ran ? Boolean(row.reqPerSec) && row.p99Ms! <= row.p99TargetMs! : undefined
    })
  }
  const ran = rows.filter((r) => r.ran && r.server !== 'baseline')
  const failures = ran.reduce((sum, r) => sum + (r.non2xx ?? 0) + (r.errors ?? 0), 0)
  targets.push({ target: 'zero non-2xx responses', measured: `${failures} in ${ran.length} scenarios`, met: ran.length ? failures === 0 : undefined })
  targets.push({ target: 'peak RSS <= 250 MB', measured: peakRssMb ? `${peakRssMb} MB` : 'n/a', met: peakRssMb ? peakRssMb <= 250 : undefined })
  targets.push({
    target: 'rate limiter costs < 10 % on GET /companies/:id',
    measured: limiterCost === undefined ? 'not run' : `${((1 - limiterCost) * 100).toFixed(1)} %`,
    met: limiterCost === undefined ? undefined : 1 - limiterCost < 0.1
  })
  targets.push({
    target: 'batch create of 100 contacts >= 20x faster per record than single creates',
    measured: batchGain === undefined ? 'not run' : `${batchGain.toFixed(1)}x`,
    met: batchGain === undefined ? undefined : batchGain >= 20
  })
  return targets
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
