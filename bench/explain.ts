import crypto from 'node:crypto'
import { once } from 'node:events'
import os from 'node:os'
import path from 'node:path'
import type { Server } from 'node:http'
import pg from 'pg'
import { createApp } from '../src/app.js'
import { send } from './http.js'
import type { BenchRequest } from './http.js'

/** Tables that are large in the benchmark's organization: a sequential scan on them is a defect. */
const LARGE_TABLES = ['contacts', 'companies', 'deals', 'deal_products', 'activities']
/** Below this many rows the planner rightly prefers a scan (e.g. at --scale 0.01), so it is not flagged. */
const LARGE_ROWS = 50_000

export interface ExplainFinding {
  scenario: string
  sql: string
  sequentialScans: string[]
  plan: string
}

/**
 * --verbose: runs the application in this process, sends each scenario's request once, records
 * the SQL it runs (knex 'query' events) and EXPLAINs every statement on the benchmark database.
 * Reads are EXPLAIN ANALYZEd; writes are only planned, so nothing changes twice.
 */
export async function explainScenarios(
  databaseUrl: string,
  probes: { id: string; title: string; request: BenchRequest }[],
  log: (message: string) => void
): Promise<ExplainFinding[]> {
  const app = await createApp({
    databaseUrl,
    logLevel: 'warn',
    dataDir: path.join(os.tmpdir(), `crm-bench-explain-${crypto.randomUUID()}`),
    rateLimitEnabled: false
  } as any)
  const captured: { sql: string; bindings: unknown[] }[] = []
  const listener = (query: { sql: string; bindings?: unknown[] }) => captured.push({ sql: query.sql, bindings: query.bindings ?? [] })
  const server: Server = await app.listen(0, '127.0.0.1')
  if (!server.listening) await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const findings: ExplainFinding[] = []
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const large: string[] = (
    await client.query('SELECT relname FROM pg_class WHERE relname = ANY($1) AND reltuples >= $2', [LARGE_TABLES, LARGE_ROWS])
  ).rows.map((r) => r.relname)
  try {
    app.get('knex').on('query', listener)
    for (const probe of probes) {
      captured.length = 0
      const response = await send(url, probe.request)
      log(`\n### EXPLAIN ${probe.id} ${probe.title} (status ${response.status})`)
      for (const { sql, bindings } of [...captured]) {
        if (!/^\s*(select|update|insert|with)/i.test(sql)) continue
        const analyze = /^\s*(select|with)/i.test(sql) ? 'ANALYZE, ' : ''
        // The recorded SQL already has the driver's $n placeholders, so it goes to pg as it is.
        const { rows } = await client.query(`EXPLAIN (${analyze}COSTS OFF) ${sql}`, bindings)
        const plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
        const sequentialScans = [...plan.matchAll(/Seq Scan on (\w+)/g)].map((m) => m[1]).filter((t) => large.includes(t))
        findings.push({ scenario: probe.id, sql, sequentialScans, plan })
        log(`\n${sql}\n${plan}${sequentialScans.length ? `\n!! sequential scan on ${sequentialScans.join(', ')}` : ''}`)
      }
    }
  } finally {
    app.get('knex').removeListener('query', listener)
    await client.end()
    await app.teardown()
  }
  return findings
}
