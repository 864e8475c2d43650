/**
 * Where a request's time goes: `npm run bench:profile -- [--scenario get] [--duration 20]
 * [--warmup 5] [--connections 50] [--service-dir DIR] [--top 25] [--allocations]`, or
 * `-- --summarize FILE.cpuprofile` for a profile taken elsewhere.
 *
 * Starts the service with `node --cpu-prof` on the benchmark database (seeded by `npm run bench`
 * first; DATABASE_URL and BENCH_DATABASE as for the benchmark), loads one scenario with
 * autocannon, stops the service (the profile is written at exit) and sums the samples of the
 * measured seconds by layer: each sample goes to the innermost frame of its stack that belongs to
 * a known layer (so pg's parser called from knex counts as pg, an Ajv validator called from a
 * Feathers hook as validation). Self-time percentages of one process do not depend on how busy
 * the machine is, unlike requests per second.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createKnex } from '../src/db.js'
import { SIDES, loadFixtures, loadScenario, serviceEnvironment } from './scenarios.js'
import { benchDatabaseUrl, freePort, nodeProcesses, serviceScript, startServer } from './processes.js'

const { values: flags } = parseArgs({
  options: {
    // A service side of the benchmark (bench/scenarios.ts), e.g. get, deals-mix, search.
    scenario: { type: 'string', default: 'get' },
    scale: { type: 'string', default: '1' },
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    seed: { type: 'string', default: '37' },
    'service-dir': { type: 'string' },
    top: { type: 'string', default: '25' },
    summarize: { type: 'string' },
    allocations: { type: 'boolean', default: false },
    env: { type: 'string', multiple: true },
    // Extra options for node itself, e.g. --node-option=--max-semi-space-size=4
    'node-option': { type: 'string', multiple: true }
  }
})

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }
interface HeapProfileNode { callFrame: CallFrame; selfSize: number; children: HeapProfileNode[] }

/** Layers of a request, matched on the script URL (or the function name) of a frame; first match wins. */
const LAYERS: { layer: string; match: (frame: CallFrame) => boolean }[] = [
  { layer: 'logging', match: url(/\/src\/logger\.[jt]s|\/node_modules\/(pino|sonic-boom|thread-stream|on-exit-leak-free)\//) },
  { layer: 'rate limiter', match: url(/\/src\/rate-limit\/|\/src\/hooks\/rate-limit\.[jt]s/) },
  { layer: 'authentication and key cache', match: url(/\/src\/authentication\.[jt]s|\/src\/hooks\/authenticate\.[jt]s|\/src\/hooks\/api-key-callers\.[jt]s|@feathersjs\/authentication|\/node_modules\/(jsonwebtoken|jws|jwa)\//) },
  { layer: 'tenant scope', match: url(/\/src\/hooks\/tenant-scope\.[jt]s/) },
  { layer: 'resolvers', match: url(/\/src\/hooks\/resolve-records\.[jt]s|@feathersjs\/schema\/lib\/resolver|custom-field-values\.[jt]s|\.schema\.[jt]s/) },
  {
    layer: 'query parsing and validation',
    match: (f) =>
      /^validate\d*$/.test(f.functionName) && !f.url ||
      /\/node_modules\/(ajv|ajv-formats|qs|side-channel[^/]*|fast-uri)\/|@feathersjs\/schema\/lib\/hooks\/validate|@feathersjs\/adapter-commons|\/src\/hooks\/(get-body-query|reject-nul)\.[jt]s|\/src\/validators\.[jt]s/.test(f.url)
  },
  { layer: 'pg (driver and protocol)', match: url(/\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+|pg-int8|pgpass|buffer-writer|packet-reader)\//) },
  { layer: 'Knex query building and adapter', match: url(/\/node_modules\/(knex|@feathersjs\/knex|lodash|tarn|colorette|debug)\/|\/src\/services\/(record-service|joins)\.[jt]s|\/src\/db\.[jt]s/) },
  { layer: 'Koa and body parsing', match: url(/\/node_modules\/(koa[^/]*|@koa\/[^/]+|co-body|raw-body|inflation|http-errors|type-is|mime-types|mime-db|content-type|accepts|negotiator|on-finished|statuses|vary|delegates|depd|encodeurl|escape-html|fresh|cookies|keygrip|only|parseurl|cache-content-type|koa-body|formidable|co|destroy|ee-first|http-assert|deep-equal|@feathersjs\/koa)\//) },
  { layer: 'Feathers services and hook chain', match: url(/@feathersjs\/(feathers|hooks|commons|transport-commons|errors)|\/src\/services\/|\/src\/hooks\/|\/src\/app\.[jt]s|\/node_modules\/events\//) },
  { layer: 'node:http and sockets', match: url(/^node:(_http_|http|net|stream|internal\/streams|internal\/http|internal\/stream_base|internal\/timers|timers|events|internal\/url|url|buffer|string_decoder|internal\/async_hooks|async_hooks|internal\/process\/task_queues|internal\/perf)/) },
  { layer: 'garbage collection', match: (f) => f.functionName === '(garbage collector)' },
  { layer: 'other (V8, native, program)', match: (f) => f.functionName === '(program)' || (!f.url && !/^\(/.test(f.functionName)) }
]

/** A frame as the summaries name it: function, then its script (from node_modules/, src/ or bench/ on) and line. */
function frameName({ functionName, url: script, lineNumber }: CallFrame) {
  return `${functionName || '(anonymous)'} ${script.replace(/^.*\/node_modules\//, '').replace(/^.*\/(src|bench)\//, '$1/')}:${lineNumber + 1}`
}

function url(pattern: RegExp) {
  return (frame: CallFrame) => pattern.test(frame.url)
}

export interface ProfileSummary {
  seconds: number
  samples: number
  layers: { layer: string; percent: number }[]
  functions: { name: string; percent: number }[]
}

/** Sums the non-idle samples of the last `seconds` (all, when absent) by layer and by function (self time). */
export function summarize(profile: CpuProfile, seconds?: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const layerOf = new Map<number, string>()
  const classify = (id: number): string => {
    const known = layerOf.get(id)
    if (known) return known
    const frame = byId.get(id)!.callFrame
    const own = LAYERS.find((rule) => frame.url && rule.match(frame) && rule.layer !== 'node:http and sockets')?.layer
    let layer = own
    if (!layer) {
      const up = parent.get(id)
      const inherited = up === undefined ? undefined : classify(up)
      // A frame of node's own modules or a builtin belongs to the application layer that called
      // it, unless nothing above it is known (socket writes, timers, the HTTP parser).
      layer = inherited && inherited !== 'unattributed' ? inherited : LAYERS.find((rule) => rule.match(frame))?.layer ?? 'unattributed'
    }
    layerOf.set(id, layer)
    return layer
  }
  const cutoff = seconds ? profile.endTime - seconds * 1e6 : -Infinity
  const layerCount = new Map<string, number>()
  const functionCount = new Map<string, number>()
  let time = profile.startTime
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i]
    if (time < cutoff) continue
    const node = byId.get(profile.samples[i])!
    const { functionName } = node.callFrame
    if (functionName === '(idle)' || functionName === '(root)') continue
    total++
    const special = functionName === '(garbage collector)' ? 'garbage collection' : functionName === '(program)' ? 'other (V8, native, program)' : undefined
    const layer = special ?? classify(node.id)
    layerCount.set(layer, (layerCount.get(layer) ?? 0) + 1)
    const name = frameName(node.callFrame)
    functionCount.set(name, (functionCount.get(name) ?? 0) + 1)
  }
  const percent = (n: number) => Math.round((1000 * n) / Math.max(total, 1)) / 10
  const sorted = (counts: Map<string, number>) => [...counts].sort((a, b) => b[1] - a[1])
  return {
    seconds: seconds ?? (profile.endTime - profile.startTime) / 1e6,
    samples: total,
    layers: sorted(layerCount).map(([layer, n]) => ({ layer, percent: percent(n) })),
    functions: sorted(functionCount).map(([name, n]) => ({ name, percent: percent(n) }))
  }
}

function print(summary: ProfileSummary, top: number) {
  const lines = [`${summary.samples} samples over ${summary.seconds.toFixed(1)} s (idle excluded)`, '', '| Layer | % of CPU samples |', '|---|---:|']
  for (const { layer, percent } of summary.layers) lines.push(`| ${layer} | ${percent.toFixed(1)} |`)
  lines.push('', '| Function (self time) | % |', '|---|---:|')
  for (const { name, percent } of summary.functions.slice(0, top)) lines.push(`| ${name.replace(/\|/g, '\\|')} | ${percent.toFixed(1)} |`)
  process.stdout.write(lines.join('\n') + '\n')
}

/** The bytes a sampling heap profile counts, by allocating function, per request. */
function printAllocations(head: HeapProfileNode, requests: number, top: number) {
  const bytes = new Map<string, number>()
  let total = 0
  const walk = (node: HeapProfileNode) => {
    const name = frameName(node.callFrame)
    bytes.set(name, (bytes.get(name) ?? 0) + node.selfSize)
    total += node.selfSize
    for (const child of node.children) walk(child)
  }
  walk(head)
  const perRequest = (n: number) => (n / 1024 / Math.max(requests, 1)).toFixed(1)
  const lines = [`${(total / 1048576).toFixed(0)} MB allocated over ${requests} requests: ${perRequest(total)} KB a request`, '', '| Function (self) | KB per request | % |', '|---|---:|---:|']
  for (const [name, n] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`| ${name.replace(/\|/g, '\\|')} | ${perRequest(n)} | ${((100 * n) / Math.max(total, 1)).toFixed(1)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
}

async function main() {
  const top = Number(flags.top)
  if (flags.summarize) {
    print(summarize(JSON.parse(fs.readFileSync(flags.summarize, 'utf8')), Number(flags.duration)), top)
    return
  }
  const adminUrl = process.env.DATABASE_URL
  if (!adminUrl) throw new Error('Set DATABASE_URL to the Postgres server of the benchmark database (seeded by npm run bench).')
  const benchUrl = benchDatabaseUrl(adminUrl)
  const scenario = SIDES.find((side) => side.id === flags.scenario && side.server === 'service')
  if (!scenario) throw new Error(`No service scenario '${flags.scenario}'; they are: ${SIDES.filter((side) => side.server === 'service').map((side) => side.id).join(', ')}`)
  const db = await createKnex(benchUrl.toString(), './data', 2)
  const fixtures = await (async () => {
    // As before a benchmark run: a profile taken after a run's writes would
    // otherwise read heap pages the visibility map no longer covers (docs/performance.md).
    await db.raw('VACUUM (ANALYZE)')
    return loadFixtures(db, Number(flags.scale))
  })().finally(() => db.destroy())

  const serviceDir = path.resolve(flags['service-dir'] ?? '.')
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-profile-'))
  const extra = Object.fromEntries((flags.env ?? []).map((pair) => pair.split('=', 2) as [string, string]))
  const env = { ...serviceEnvironment(benchUrl.toString(), fs.mkdtempSync(path.join(os.tmpdir(), 'crm-bench-'))), ...extra }
  fs.mkdirSync('bench/results', { recursive: true })
  const allocationsFile = path.join(profileDir, 'allocations.heapprofile')
  const profiler = flags.allocations
    ? ['--import', path.resolve('bench/allocation-sampler.mjs')]
    : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  if (flags.allocations) env.BENCH_ALLOCATIONS_FILE = allocationsFile
  const server = await startServer(
    'service', ['node', ...(flags['node-option'] ?? []), ...profiler, ...serviceScript(serviceDir)], await freePort(), env,
    '/health', path.resolve('bench/results/profile-service.log'), serviceDir
  )
  // The allocation sampler starts and stops on SIGUSR2.
  const toggleSampler = () => { for (const pid of nodeProcesses(server.child.pid!)) process.kill(pid, 'SIGUSR2') }
  const duration = Number(flags.duration)
  let requests = 0
  try {
    const load = (seed: string, seconds: number) => loadScenario(server.url, scenario, fixtures, seed, seconds, Number(flags.connections))
    await load(`${flags.seed}:warm-up`, Number(flags.warmup))
    if (flags.allocations) toggleSampler()
    const cpuBefore = server.cpuMs()
    const result = await load(`${flags.seed}:profile`, duration)
    if (flags.allocations) toggleSampler()
    const cpuPerRequest = (server.cpuMs() - cpuBefore) / Math.max(result.requests.total, 1)
    requests = result['2xx']
    process.stderr.write(
      `${scenario.id} ${scenario.title}: ${Math.round(result['2xx'] / result.duration)} req/s (2xx), p99 ${result.latency.p99} ms, ` +
      `non-2xx ${result.non2xx}; ${cpuPerRequest.toFixed(3)} ms of service CPU per request (with the profiler on); peak RSS ${server.peakRssMb()} MB\n`
    )
    if (flags.allocations) {
      for (let attempt = 0; attempt < 80 && !fs.existsSync(allocationsFile); attempt++) await new Promise((resolve) => setTimeout(resolve, 250))
    }
  } finally {
    await server.stop()
  }
  if (flags.allocations) {
    const kept = path.join('bench/results', `allocations-${scenario.id}-${crypto.randomUUID().slice(0, 8)}.heapprofile`)
    fs.copyFileSync(allocationsFile, kept)
    process.stderr.write(`Allocation profile: ${kept} (open it in Chrome DevTools' Memory tab)\n`)
    printAllocations(JSON.parse(fs.readFileSync(kept, 'utf8')).head, requests, top)
    return
  }
  // node writes the profile as the service's process exits (after npx, which stop() waits for);
  // the main thread's is the largest (worker threads write their own).
  let file: string | undefined
  for (let attempt = 0; attempt < 40 && !file; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    file = fs.readdirSync(profileDir).filter((name) => name.endsWith('.cpuprofile'))
      .sort((a, b) => fs.statSync(path.join(profileDir, b)).size - fs.statSync(path.join(profileDir, a)).size)[0]
  }
  if (!file) throw new Error(`No profile written in ${profileDir}`)
  // The file may still be being written: wait until it parses.
  let profile: CpuProfile | undefined
  for (let attempt = 0; attempt < 80 && !profile; attempt++) {
    try {
      profile = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8'))
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }
  if (!profile) throw new Error(`The profile ${path.join(profileDir, file)} is not complete`)
  const kept = path.join('bench/results', `profile-${scenario.id}-${crypto.randomUUID().slice(0, 8)}.cpuprofile`)
  fs.copyFileSync(path.join(profileDir, file), kept)
  process.stderr.write(`Profile: ${kept} (${requests} requests measured; open it in Chrome DevTools or speedscope for the flame graph)\n`)
  print(summarize(profile, duration), top)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
