#!/usr/bin/env node
// How 10,000 organizations of skewed sizes divide over the shards and workers of a Citus cluster,
// and which of them to isolate first (docs/scaling.md, "Growth: how tenants divide over shards").
//
// No database: the script places each organization the way Citus does. Citus hashes the
// distribution column with PostgreSQL's hash function for its type (hashint4 for the integer
// organization_id, reimplemented below) and gives shard i of N the i-th of N equal ranges of the
// signed 32-bit hash space; shards are placed round-robin over the workers, and the rebalancer's
// default strategy (by_shard_count) leaves each worker an equal number of shards.
//
//   node scripts/citus-growth.mjs [--orgs 10000] [--shards 32] [--seed 51] [--alpha 1.1]
//
// Sizes follow a Pareto distribution (a few very large organizations, most small); each
// organization's deals and activities per contact and its requests per row vary around a mean,
// so load is proportional to size but not exactly. The same seed prints the same tables.

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), [])
)
const ORGS = Number(args.orgs ?? 10000)
const SHARDS = Number(args.shards ?? 32)
const SEED = Number(args.seed ?? 51)
const ALPHA = Number(args.alpha ?? 1.1) // Pareto shape: 1.16 is the "80/20" rule; lower, more skew
const MIN_CONTACTS = 20 // the smallest organizations
const MAX_CONTACTS = 5_000_000

// Bytes per row with its indexes (order of magnitude of this schema's rows).
const ROW_BYTES = { companies: 900, contacts: 1200, deals: 700, activities: 600 }

// A small deterministic generator (mulberry32): the same seed, the same organizations.
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const next = random(SEED)
const normal = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
const logNormal = (sigma) => Math.exp(sigma * normal() - (sigma * sigma) / 2) // mean 1

// PostgreSQL's hash_bytes_uint32 (src/common/hashfn.c), which hashint4 and, for values that fit
// in 32 bits, hashint8 return: Citus routes a row by it.
const rot = (x, k) => ((x << k) | (x >>> (32 - k))) >>> 0
function hashint4(k) {
  let a = (0x9e3779b9 + 4 + 3923095) >>> 0
  let b = a
  let c = a
  a = (a + (k >>> 0)) >>> 0
  c = ((c ^ b) - rot(b, 14)) >>> 0
  a = ((a ^ c) - rot(c, 11)) >>> 0
  b = ((b ^ a) - rot(a, 25)) >>> 0
  c = ((c ^ b) - rot(b, 16)) >>> 0
  a = ((a ^ c) - rot(c, 4)) >>> 0
  b = ((b ^ a) - rot(a, 14)) >>> 0
  c = ((c ^ b) - rot(b, 24)) >>> 0
  return c | 0 // signed, as PostgreSQL returns it
}
// Shard i holds the hashes from -2^31 + i * 2^32 / N (Citus's equal ranges).
const shardOf = (organizationId) => Math.floor(((hashint4(organizationId) + 2 ** 31) * SHARDS) / 2 ** 32)

const organizations = []
for (let id = 1; id <= ORGS; id++) {
  const contacts = Math.min(MAX_CONTACTS, Math.floor(MIN_CONTACTS / Math.pow(1 - next(), 1 / ALPHA)))
  const rows = {
    companies: Math.round((contacts / 5) * logNormal(0.5)),
    contacts,
    deals: Math.round(contacts * 0.3 * logNormal(0.6)),
    activities: Math.round(contacts * 3 * logNormal(0.8))
  }
  const bytes = Object.entries(rows).reduce((sum, [table, n]) => sum + n * ROW_BYTES[table], 0)
  const rowCount = Object.values(rows).reduce((sum, n) => sum + n, 0)
  // Requests per day: about one per twenty rows, busier or quieter by organization.
  const requests = (rowCount / 20) * logNormal(0.7)
  organizations.push({ id, rows, rowCount, bytes, requests, shard: shardOf(id) })
}

const total = (key, list = organizations) => list.reduce((sum, o) => sum + o[key], 0)
const totalBytes = total('bytes')
const totalRequests = total('requests')
const totalRows = total('rowCount')
const pct = (x) => `${(100 * x).toFixed(1)} %`
const gb = (bytes) => `${(bytes / 1e9).toFixed(1)} GB`
const table = (header, lines) =>
  [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...lines.map((l) => `| ${l.join(' | ')} |`)].join('\n')

const shards = Array.from({ length: SHARDS }, (_, i) => {
  const members = organizations.filter((o) => o.shard === i)
  return { index: i, organizations: members.length, bytes: total('bytes', members), requests: total('requests', members) }
})

const sorted = [...organizations].sort((x, y) => y.bytes - x.bytes)
const sizes = organizations.map((o) => o.rows.contacts).sort((x, y) => x - y)
const quantile = (q) => sizes[Math.min(sizes.length - 1, Math.floor(q * sizes.length))]
const top = (n) => total('bytes', sorted.slice(0, n)) / totalBytes

console.log(`## ${ORGS.toLocaleString('en')} organizations, seed ${SEED}, Pareto shape ${ALPHA}\n`)
console.log(
  table(
    ['', 'value'],
    [
      ['rows (companies, contacts, deals, activities)', (totalRows / 1e6).toFixed(1) + ' M'],
      ['data', gb(totalBytes)],
      ['requests per day', (totalRequests / 1e6).toFixed(1) + ' M'],
      ['contacts per organization: median, 90th, 99th percentile, largest', `${quantile(0.5)}, ${quantile(0.9)}, ${quantile(0.99)}, ${sizes.at(-1).toLocaleString('en')}`],
      ['data of the largest 1, 10, 100 organizations', `${pct(top(1))}, ${pct(top(10))}, ${pct(top(100))}`]
    ]
  )
)

// Workers: round-robin placement, which the by_shard_count rebalance also gives after workers are
// added (an equal number of shards each; which shards move is the rebalancer's choice).
for (const workers of [2, 4]) {
  const rows = Array.from({ length: workers }, (_, w) => {
    const held = shards.filter((s) => s.index % workers === w)
    return [`worker ${w + 1}`, held.length, pct(total('bytes', held) / totalBytes), pct(total('requests', held) / totalRequests)]
  })
  console.log(`\n### ${workers} workers, ${SHARDS} shards (fair share ${pct(1 / workers)} each)\n`)
  console.log(table(['worker', 'shards', 'data', 'requests'], rows))
}

const bySize = [...shards].sort((x, y) => y.bytes - x.bytes)
console.log(`\n### Shards (fair share ${pct(1 / SHARDS)} each): the largest five and the smallest\n`)
console.log(
  table(
    ['shard', 'organizations', 'data', 'requests', 'largest organization in it'],
    [...bySize.slice(0, 5), bySize.at(-1)].map((s) => {
      const biggest = sorted.find((o) => o.shard === s.index)
      return [s.index + 1, s.organizations, pct(s.bytes / totalBytes), pct(s.requests / totalRequests), `${biggest.id} (${pct(biggest.bytes / totalBytes)})`]
    })
  )
)

// An organization larger than a shard's fair share is a shard's worth on its own: isolating it
// (isolate_tenant_to_new_shard) lets the operator move it, and its load, to a worker of its own.
const fair = 1 / SHARDS
const candidates = sorted.filter((o) => o.bytes / totalBytes > fair || o.requests / totalRequests > fair)
console.log(`\n### Organizations to isolate first: own share above a shard's fair share (${pct(fair)})\n`)
console.log(
  table(
    ['organization', 'contacts', 'data', 'requests', 'shard', "shard's data", "shard's data without it"],
    candidates.map((o) => {
      const s = shards[o.shard]
      return [o.id, o.rows.contacts.toLocaleString('en'), pct(o.bytes / totalBytes), pct(o.requests / totalRequests), o.shard + 1, pct(s.bytes / totalBytes), pct((s.bytes - o.bytes) / totalBytes)]
    })
  )
)

// After isolating them, and putting each on the least loaded worker, how even are 4 workers?
const isolated = new Set(candidates.map((o) => o.id))
const rest = shards.map((s) => ({ ...s, bytes: s.bytes - total('bytes', candidates.filter((o) => o.shard === s.index)) }))
const largestShardAfter = Math.max(...rest.map((s) => s.bytes)) / totalBytes
const load = [0, 0, 0, 0]
rest.forEach((s) => (load[s.index % 4] += s.bytes))
for (const o of candidates) load[load.indexOf(Math.min(...load))] += o.bytes
console.log(
  `\nAfter isolating ${isolated.size} organization(s): the largest shared shard holds ${pct(largestShardAfter)} of the data; ` +
    `with each isolated shard moved to the least loaded of 4 workers, the workers hold ${load.map((b) => pct(b / totalBytes)).join(', ')}.`
)
