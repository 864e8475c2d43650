/**
 * What one SQL statement costs Postgres, without the service around it: runs each statement file
 * many times on one connection to the benchmark's database and prints, per call, the wall time and
 * the CPU time of that connection's backend process (user + system, from /proc/<pid>/stat, so the
 * database must run on this machine). Each file runs twice, interleaved with the others, after a
 * warm-up of 200 calls.
 *
 *   npm run bench:statement -- --values '[1,"deals",1,50]' a.sql b.sql   (named: prepared and planned once)
 *   npm run bench:statement -- --unnamed --values '[…]' a.sql            (parsed and planned per call)
 *   npm run bench:statement -- --custom --values '[…]' a.sql             (prepared, planned per call)
 *
 * A file holds one statement with $1, $2… (auto_explain's `Query Text` of the server log, say);
 * --values gives them as JSON, --calls how many measured calls (default 3,000). DATABASE_URL and
 * BENCH_DATABASE as for the benchmark.
 */
import fs from 'node:fs'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { benchDatabaseUrl, cpuTimeMs } from './processes.js'

const { values: flags, positionals: files } = parseArgs({
  allowPositionals: true,
  options: {
    values: { type: 'string', default: '[]' },
    calls: { type: 'string', default: '3000' },
    unnamed: { type: 'boolean', default: false },
    custom: { type: 'boolean', default: false }
  }
})
const adminUrl = process.env.DATABASE_URL
if (!adminUrl || files.length === 0) {
  console.error('usage: DATABASE_URL=… npm run bench:statement -- [--unnamed | --custom] [--calls N] --values JSON file.sql…')
  process.exit(2)
}
const url = benchDatabaseUrl(adminUrl)
const calls = Number(flags.calls)
const values = JSON.parse(flags.values) as unknown[]

const client = new pg.Client({ connectionString: url.toString() })
await client.connect()
// Named statements planned once, for any values; --custom prepares them but plans each call for its values.
if (!flags.unnamed) await client.query(`SET plan_cache_mode = ${flags.custom ? 'force_custom_plan' : 'force_generic_plan'}`)
const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid
const backendCpuMs = () => cpuTimeMs(pid)

try {
  for (const round of [1, 2]) {
    for (const [index, file] of files.entries()) {
      const text = fs.readFileSync(file, 'utf8')
      const name = flags.unnamed ? undefined : `statement cost ${index}`
      const run = () => client.query({ name, text, values, rowMode: 'array' })
      for (let i = 0; i < 200; i++) await run()
      const cpuBefore = backendCpuMs()
      const started = performance.now()
      for (let i = 0; i < calls; i++) await run()
      const wallUs = ((performance.now() - started) / calls) * 1000
      const cpuUs = ((backendCpuMs() - cpuBefore) / calls) * 1000
      console.log(`round ${round}  ${file}  wall ${wallUs.toFixed(0)} µs/call  postgres CPU ${cpuUs.toFixed(0)} µs/call`)
    }
  }
} finally {
  await client.end()
}
