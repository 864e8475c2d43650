/**
 * The benchmark: the comparisons of the service with a bare node:http + pg server doing the same
 * SQL work on the same database, and the measurements against their targets (search, scale,
 * imports), in one run, as one table. See bench/README.md.
 *
 *   npm run bench -- [--quick] [--check] [--only create,get] [--scale 1] [--duration 15] [--warmup 3]
 *     [--connections 50] [--rounds 2] [--seed 37] [--check-requests 10] [--reseed] [--verbose]
 *     [--service-dir DIR] [--out FILE]
 *
 * Needs DATABASE_URL (a Postgres server); works in its own database there (BENCH_DATABASE,
 * default crm_bench).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import { createKnex } from '../src/db.js'
import { send } from './http.js'
import { GROUPS, loadFixtures, loadScenario, serviceEnvironment, streamOf } from './scenarios.js'
import type { Fixtures, Group, ServerName, Side } from './scenarios.js'
import { benchDatabaseName, databaseCpuMs, databaseCpuSpentMs, freePort, serviceScript, startServer } from './processes.js'
import type { Server } from './processes.js'
import { prepareDatabase } from './database.js'
import { checkAnswers } from './check.js'
import type { GroupCheck } from './check.js'
import { checkLines, legendLines, markdownTable, tableRows } from './report.js'
import type { Finding, Measured } from './report.js'
import { explainScenarios } from './explain.js'
import { ensureScaleOrganizations } from './scale.js'
import type { ProbeContext } from './probes.js'

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
    only: { type: 'string' },
    scale: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    rounds: { type: 'string' },
    seed: { type: 'string', default: '37' },
    'check-requests': { type: 'string' },
    reseed: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    // Another checkout of the service (e.g. main before a change): its src/ and migrations/ run.
    'service-dir': { type: 'string' },
    out: { type: 'string' }
  }
})
/** --quick: a small seed and short loads, to see the whole run work; a flag given explicitly wins. */
const setting = (name: 'scale' | 'duration' | 'warmup' | 'rounds' | 'check-requests' | 'connections', full: number, quick: number) =>
  Number(flags[name] ?? (flags.quick ? quick : full))
const scale = setting('scale', 1, 0.01)
const duration = setting('duration', 15, 2)
const warmup = setting('warmup', 3, 1)
const rounds = setting('rounds', 2, 1)
const checkRequests = setting('check-requests', 10, 5)
const connections = setting('connections', 50, 10)
const seed = flags.seed!
const serviceDir = path.resolve(flags['service-dir'] ?? '.')

const log = (message: string) => process.stderr.write(message + '\n')
const RESULTS = 'bench/results'
// The service inherits REDIS_URL: with it the limiter runs on Redis, as in production.
const LIMITER_STORE = process.env.REDIS_URL ? 'Redis' : 'the in-process store'

/** The issues' groups by default; --only names groups (the extra ones too). */
function selectedGroups(): Group[] {
  const only = flags.only?.split(',').map((id) => id.trim())
  const unknown = only?.filter((id) => !GROUPS.some((group) => group.id === id))
  if (unknown?.length) throw new Error(`No group ${unknown.join(', ')}; the groups: ${GROUPS.map((group) => group.id).join(', ')}`)
  return GROUPS.filter((group) => (only ? only.includes(group.id) : !group.extra))
}

async function main() {
  const adminUrl = process.env.DATABASE_URL
  if (!adminUrl) throw new Error('Set DATABASE_URL to a Postgres server (the benchmark creates its own database there).')
  const benchUrl = await prepareDatabase(adminUrl, benchDatabaseName(), { scale, reseed: flags.reseed, serviceDir, log })
  const db = await createKnex(benchUrl, './data', 2)
  benchDb = db
  const servers: Partial<Record<ServerName, Server>> = {}
  try {
    const groups = selectedGroups()
    if (!flags.check && groups.some((group) => group.id === 'scale')) await ensureScaleOrganizations(db, scale, log)
    const fixtures = await loadFixtures(db, scale)
    log(`Large organization ${fixtures.organizationId}: ${JSON.stringify(fixtures.seed.large.rows)}`)
    const needs = new Set(groups.flatMap((group) => (group.probe ? ['service' as const] : group.sides.map((side) => side.server))))
    if (flags.check) needs.add('service').add('bare')
    fs.mkdirSync(RESULTS, { recursive: true })
    await startServers(servers, needs, benchUrl, fixtures)

    const checks = servers.service && servers.bare
      ? await checkAnswers(db, { service: servers.service.url, bare: servers.bare.url }, flags.check ? GROUPS : groups, fixtures, seed, checkRequests)
      : []
    if (flags.check) {
      process.stdout.write(checkLines(checks).join('\n') + '\n')
      if (checks.some((check) => check.mismatched)) process.exitCode = 1
      return
    }

    const context = (server: Server): ProbeContext => ({ url: server.url, db, databaseUrl: benchUrl, fixtures, seed, connections, scale, log })
    const { measured, findings } = await runGroups(groups, servers, fixtures, context)
    // Requests still queued for a database connection when the load stopped finish first.
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const peakRssMb = servers.service?.peakRssMb()
    for (const name of Object.keys(servers) as ServerName[]) await servers[name]!.stop()

    const explained = flags.verbose && serviceDir === process.cwd()
      ? await explainScenarios(benchUrl, groups.flatMap((group) => group.sides).filter((side) => side.server === 'service')
        .map((side) => ({ id: side.id, title: side.title, request: streamOf(side, fixtures, `${seed}:explain`)() })), log)
      : undefined
    const postgres = (await db.raw('SHOW server_version')).rows[0].server_version as string
    const rows = tableRows(measured, findings, checks, peakRssMb, scale)
    const workers = Number(process.env.WEB_CONCURRENCY ?? 1) || 1
    const sizes = Object.entries(fixtures.seed.large.rows).map(([table, n]) => `${n.toLocaleString('en')} ${table}`).join(', ')
    const flagged = explained?.filter((finding) => finding.sequentialScans.length > 0) ?? []
    const markdown = [
      `Scale ${scale}: ${sizes} in the large organization; ${connections} connections, no pipelining; ${warmup} s warm-up, ${duration} s a side and round${groups.some((group) => group.halfDuration) ? ' (the scale group\'s half of it)' : ''}, ` +
        `${rounds} round${rounds === 1 ? '' : 's'} (A B … B A); request streams seeded '${seed}'; rate limiter on ${LIMITER_STORE}; ${workers} worker${workers === 1 ? '' : 's'} (WEB_CONCURRENCY).`,
      '',
      ...markdownTable(rows),
      '',
      ...legendLines(groups.some((group) => group.id === 'scale') ? fixtures.scale : undefined),
      '',
      ...checkLines(checks),
      ...(explained ? ['', flagged.length === 0
        ? `EXPLAIN: no sequential scan on a large table in the ${explained.length} statements of the service's scenarios.`
        : `EXPLAIN: sequential scans on large tables in ${flagged.length} statement(s):`, ...flagged.map((f) => `- ${f.scenario}: Seq Scan on ${f.sequentialScans.join(', ')} — ${f.sql.slice(0, 160)}`)] : [])
    ].join('\n')
    process.stdout.write(markdown + '\n')
    const out = flags.out ?? `${RESULTS}/latest.json`
    fs.writeFileSync(out, JSON.stringify({
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryMb: Math.round(os.totalmem() / 2 ** 20), node: process.version, postgres },
      scale, durationS: duration, warmupS: warmup, connections, rounds, seed, rateLimiterStore: LIMITER_STORE, workers, serviceDir,
      rows: fixtures.seed.large.rows,
      scaleOrganizations: fixtures.scale && { smaller: fixtures.scale.smaller.contacts, larger: fixtures.scale.larger.contacts },
      table: rows, sides: measured, findings, peakRssMb, check: checks, explain: explained
    }, null, 2) + '\n')
    log(`Written to ${out}`)
  } finally {
    for (const server of Object.values(servers)) await server.stop()
    await db.destroy()
  }
}

/** The service as `npm start` runs it (built to dist/, then plain node) from its checkout, and the other servers the groups need. */
async function startServers(servers: Partial<Record<ServerName, Server>>, needs: Set<ServerName>, benchUrl: string, fixtures: Fixtures) {
  const logs = path.resolve(RESULTS)
  const serviceEnv = serviceEnvironment(benchUrl, fs.mkdtempSync(path.join(os.tmpdir(), 'crm-bench-')))
  const script = needs.has('service') || needs.has('service without rate limit') ? serviceScript(serviceDir) : []
  const startService = async (name: ServerName, env: NodeJS.ProcessEnv, file: string) =>
    startServer(name, ['node', ...script], await freePort(), env, '/health', path.join(logs, file), serviceDir)
  if (needs.has('service')) servers.service = await startService('service', serviceEnv, 'service.log')
  if (needs.has('service without rate limit')) {
    servers['service without rate limit'] = await startService('service without rate limit', { ...serviceEnv, RATE_LIMIT_ENABLED: 'false' }, 'service-without-rate-limit.log')
  }
  if (needs.has('bare')) {
    servers.bare = await startServer(
      'bare', ['tsx', 'bench/bare.ts'], await freePort(),
      { DATABASE_URL: benchUrl, ORGANIZATION_ID: String(fixtures.organizationId), USER_ID: String(fixtures.keyUserId) },
      `/contacts/${fixtures.contactIds[0]}`, path.join(logs, 'bare.log')
    )
  }
}

/**
 * Each group's sides in A B … B A order over the rounds: drift on this shared machine hits every
 * side alike. A group of its own runs once, on the service, and what it left behind is caught up
 * before the next group.
 */
async function runGroups(groups: Group[], servers: Partial<Record<ServerName, Server>>, fixtures: Fixtures, context: (server: Server) => ProbeContext) {
  const measured = new Map<string, Measured>()
  const findings: Finding[] = []
  for (const group of groups) {
    await group.prepare?.(context(servers.service!))
    if (group.probe) {
      findings.push(...(await group.probe(context(servers.service!))))
      await catchUp(benchDb)
      await settle(servers.service!)
      continue
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? group.sides : [...group.sides].reverse()
      for (const side of order) {
        const row = await measure(group, side, servers[side.server]!, fixtures, round, measured.get(side.id))
        measured.set(side.id, row)
      }
    }
  }
  return { measured: [...measured.values()], findings }
}

const warmed = new Set<Server>()

/**
 * The first round of a side: a probe request (a failing one is reported, not loaded) and a
 * warm-up; then the measurement, merged into the earlier rounds: req/s averaged, the worse p50
 * and p99 kept, failures added up.
 */
async function measure(group: Group, side: Side, server: Server, fixtures: Fixtures, round: number, previous?: Measured): Promise<Measured> {
  const base = { id: side.id, title: side.title, server: side.server, group: group.id, records: side.records }
  if (previous && !previous.ran) return previous
  const warmupSeed = `${seed}:${group.id}:warm-up`
  if (!previous) {
    const probe = await send(server.url, streamOf(side, fixtures, warmupSeed)()).catch((error: Error) => ({ status: 0, body: error.message }))
    if (probe.status < 200 || probe.status > 299) {
      const message = typeof probe.body === 'object' ? probe.body?.message : String(probe.body).slice(0, 80)
      log(`${side.id}: not run, the probe answered ${probe.status} ${message ?? ''}`)
      return { ...base, ran: false, note: `not run: probe answered ${probe.status}${message ? ` (${message})` : ''}` }
    }
    // A server's first load also warms the server itself (JIT, pool): three times longer.
    const seconds = warmed.has(server) ? warmup : warmup * 3
    warmed.add(server)
    if (seconds > 0) await loadScenario(server.url, side, fixtures, warmupSeed, seconds, connections)
    await catchUp(benchDb)
    await settle(server)
  }
  const measuredSeconds = group.halfDuration ? Math.max(1, Math.round(duration / 2)) : duration
  log(`${side.id} (${side.title}), round ${round + 1}: ${measuredSeconds} s at ${connections} connections`)
  const cpuBefore = server.cpuMs()
  const dbBefore = databaseCpuMs(process.env.DATABASE_URL!)
  const result: autocannon.Result = await loadScenario(server.url, side, fixtures, `${seed}:${group.id}:${round}`, measuredSeconds, connections)
  const catchUpS = await catchUp(benchDb)
  const total = Math.max(result.requests.total, 1)
  const cpuMsPerRequest = (server.cpuMs() - cpuBefore) / total
  const dbAfter = databaseCpuMs(process.env.DATABASE_URL!)
  await settle(server)
  const dbCpuMsPerRequest = dbBefore && dbAfter ? databaseCpuSpentMs(dbBefore, dbAfter) / total : undefined
  const row: Measured = {
    ...base,
    ran: true,
    rounds: 1,
    reqPerSec: Math.round(result['2xx'] / (result.duration + catchUpS)),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    latency: { mean: result.latency.mean, p75: result.latency.p75, p90: result.latency.p90, p97_5: result.latency.p97_5, max: result.latency.max },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    requests: result.requests.total,
    cpuMsPerRequest,
    dbCpuMsPerRequest,
    catchUpS
  }
  if (!previous) return row
  const weighted = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : (a * previous.requests! + b * row.requests!) / (previous.requests! + row.requests!)
  return {
    ...row,
    rounds: previous.rounds! + 1,
    reqPerSec: Math.round((previous.reqPerSec! * previous.rounds! + row.reqPerSec!) / (previous.rounds! + 1)),
    p50Ms: Math.max(previous.p50Ms!, row.p50Ms!),
    p99Ms: Math.max(previous.p99Ms!, row.p99Ms!),
    latency: previous.p99Ms! > row.p99Ms! ? previous.latency : row.latency,
    non2xx: previous.non2xx! + row.non2xx!,
    errors: previous.errors! + row.errors!,
    timeouts: previous.timeouts! + row.timeouts!,
    requests: previous.requests! + row.requests!,
    cpuMsPerRequest: weighted(previous.cpuMsPerRequest, cpuMsPerRequest),
    dbCpuMsPerRequest: weighted(previous.dbCpuMsPerRequest, dbCpuMsPerRequest),
    catchUpS: previous.catchUpS! + catchUpS
  }
}

let benchDb: Knex

/**
 * Work a load left behind is that load's work: waits (at most two minutes) until the contact name
 * index has no pending contacts, and returns the seconds waited, which count in the side's req/s
 * (and its CPU figures). A checkout without the pending table leaves none.
 */
async function catchUp(db: Knex): Promise<number> {
  const started = Date.now()
  if (!(await db.raw("SELECT to_regclass('contact_name_pending') IS NOT NULL AS present")).rows[0].present) return 0
  while (Date.now() - started < 120_000) {
    if ((await db.raw('SELECT NOT EXISTS (SELECT 1 FROM contact_name_pending) AS done')).rows[0].done) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return (Date.now() - started) / 1000
}

/**
 * Waits, at most 15 s, until the server is idle (its node processes under a tenth of a core):
 * requests a load left queued when it stopped must not run into the next side's measurement.
 */
async function settle(server: Server) {
  for (let waited = 0; waited < 15_000; waited += 250) {
    const before = server.cpuMs()
    await new Promise((resolve) => setTimeout(resolve, 250))
    if (server.cpuMs() - before < 25) return
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
