/**
 * CSV import and export against their targets (issue 49, docs/import-export.md):
 * - an import of 100,000 contacts (custom fields, one company per 20 contacts) through
 *   POST /imports, against the same rows sent as single POST /contacts (a time-boxed sample,
 *   its rate extrapolated): the ratio (target at least 5x) and the service's peak RSS (target
 *   under 250 MB);
 * - an export of 1,000,000 contacts with Accept: text/csv: rows per second and the service's
 *   RSS sampled while it streams (flat).
 *
 *   npm run bench:import -- [--scale 1] [--singles-seconds 20] [--singles-clients 4] [--export-rows 1000000] [--verbose]
 *
 * Needs DATABASE_URL (a Postgres server); works in its own database there (BENCH_IMPORT_DATABASE,
 * default crm_bench_import), made afresh each run. The service runs as `npm start` runs it.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import http from 'node:http'
import { parseArgs } from 'node:util'
import { stringify } from 'csv-stringify/sync'
import { createKnex, migrate } from '../src/db.js'
import { send } from './http.js'
import { freePort, nodeProcesses, serviceScript, startServer } from './processes.js'
import { serviceEnvironment } from './scenarios.js'

const { values: flags } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    'singles-seconds': { type: 'string', default: '20' },
    'singles-clients': { type: 'string', default: '4' },
    'export-rows': { type: 'string' },
    verbose: { type: 'boolean', default: false }
  }
})
const scale = Number(flags.scale)
const importRows = Math.max(100, Math.round(100_000 * scale))
const exportRows = Number(flags['export-rows'] ?? Math.max(1000, Math.round(1_000_000 * scale)))
const singlesSeconds = Number(flags['singles-seconds']) * Math.min(1, Math.max(scale, 0.25))
const singlesClients = Number(flags['singles-clients'])
const log = (message: string) => console.log(`[bench:import] ${message}`)

const adminUrl = process.env.DATABASE_URL
if (!adminUrl) throw new Error('npm run bench:import needs DATABASE_URL (a Postgres server)')
const databaseName = process.env.BENCH_IMPORT_DATABASE || 'crm_bench_import'
if (!/^[a-z_][a-z0-9_]*$/.test(databaseName)) throw new Error('BENCH_IMPORT_DATABASE must be a plain identifier')

/** The resident memory of the service's node processes now, in MB. */
const rssMb = (pid: number) => Math.round(nodeProcesses(pid).reduce((sum, child) => {
  const status = fs.readFileSync(`/proc/${child}/status`, 'utf8')
  return sum + Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
}, 0) / 1024)

/** Samples fn every 250 ms until stop() is called: the samples. */
function sampler(fn: () => number) {
  const samples: number[] = []
  const timer = setInterval(() => samples.push(fn()), 250)
  return { stop: () => { clearInterval(timer); return samples } }
}

async function freshDatabase(): Promise<string> {
  const admin = await createKnex(adminUrl!, './data', 1)
  try {
    await admin.raw(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`)
    await admin.raw(`CREATE DATABASE ${databaseName}`)
  } finally {
    await admin.destroy()
  }
  const url = new URL(adminUrl!)
  url.pathname = `/${databaseName}`
  const db = await createKnex(url.toString(), './data', 1)
  try {
    await migrate(db)
  } finally {
    await db.destroy()
  }
  return url.toString()
}

/** A new account, organization and API key, with the two custom fields of the rows. */
async function tenant(base: string, label: string) {
  const email = `${label}-${Date.now()}@bench.example`
  const password = 'correct horse battery'
  await send(base, { method: 'POST', path: '/users', body: { email, password, first_name: 'Bench', last_name: label } })
  const token = (await send(base, { method: 'POST', path: '/authentication', body: { strategy: 'local', email, password } })).body.accessToken
  const bearer = { Authorization: `Bearer ${token}` }
  const organization = (await send(base, { method: 'POST', path: '/organizations', headers: bearer, body: { name: `Bench ${label}` } })).body
  const key = (await send(base, { method: 'POST', path: '/api-keys', headers: bearer, body: { organization_id: organization.id, name: 'bench' } })).body.key
  const headers = { 'x-api-key': key }
  await send(base, { method: 'POST', path: '/custom-fields', headers, body: { entity_type: 'contact', key: 'budget', name: 'Budget', field_type: 'number' } })
  await send(base, { method: 'POST', path: '/custom-fields', headers, body: { entity_type: 'contact', key: 'source', name: 'Source', field_type: 'text' } })
  return { organizationId: organization.id as number, headers }
}

const row = (i: number) => ({ first: `First${i}`, last: `Last ${i}`, email: `person${i}@import.bench`, company: `Company ${i % Math.max(1, Math.floor(importRows / 20))}`, budget: String(i % 10_000), source: i % 2 ? 'fair' : 'web' })

function writeCsv(file: string) {
  const out = fs.openSync(file, 'w')
  fs.writeSync(out, stringify([['First Name', 'Last Name', 'Email', 'Company', 'Budget', 'Source']]))
  for (let start = 0; start < importRows; start += 1000) {
    const rows = Array.from({ length: Math.min(1000, importRows - start) }, (_, k) => row(start + k))
    fs.writeSync(out, stringify(rows.map((r) => [r.first, r.last, r.email, r.company, r.budget, r.source])))
  }
  fs.closeSync(out)
}

async function importFile(base: string, headers: Record<string, string>, file: string) {
  const form = new FormData()
  form.set('resource', 'contacts')
  form.set('keys', 'email')
  form.set('file', new Blob([fs.readFileSync(file)], { type: 'text/csv' }), 'contacts.csv')
  const uploadStart = performance.now()
  const created = await fetch(`${base}/imports`, { method: 'POST', headers, body: form }).then((res) => res.json())
  if (!created.id) throw new Error(`upload failed: ${JSON.stringify(created)}`)
  const previewMs = performance.now() - uploadStart
  const runStart = performance.now()
  await send(base, { method: 'POST', path: `/imports/${created.id}`, headers: { ...headers, 'x-service-method': 'start' }, body: {} })
  for (;;) {
    const record = (await send(base, { method: 'GET', path: `/imports/${created.id}`, headers })).body
    if (!['queued', 'running'].includes(record.status)) return { record, previewMs, runMs: performance.now() - runStart }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** Single POST /contacts of the same rows (after the imported ones) for a while, from a few clients: rows per second. */
async function singlesRate(base: string, headers: Record<string, string>, companyIds: number[]) {
  let sent = 0
  const deadline = performance.now() + singlesSeconds * 1000
  const start = performance.now()
  await Promise.all(Array.from({ length: singlesClients }, async () => {
    while (performance.now() < deadline) {
      const r = row(importRows + sent++)
      const res = await send(base, { method: 'POST', path: '/contacts', headers, body: {
        first_name: r.first, last_name: r.last, email: r.email, company_id: companyIds[sent % companyIds.length], custom_fields_by_name: { Budget: Number(r.budget), Source: r.source }
      } })
      if (res.status !== 201) throw new Error(`POST /contacts: ${res.status} ${JSON.stringify(res.body)}`)
    }
  }))
  return { rows: sent, perSecond: sent / ((performance.now() - start) / 1000) }
}

/** Contacts for the export, written straight into the database (the export is what is measured). */
async function fillForExport(databaseUrl: string, organizationId: number) {
  const db = await createKnex(databaseUrl, './data', 1)
  try {
    for (let start = 0; start < exportRows; start += 100_000) {
      await db.raw(
        `INSERT INTO contacts (organization_id, first_name, last_name, email, system_type, custom_fields)
         SELECT ?, 'Export' || i, 'Row ' || i, 'export' || i || '@export.bench', 'contact', jsonb_build_object('budget', i % 1000, 'source', 'bulk')
           FROM generate_series(?::int, ?::int) AS i`,
        [organizationId, start, Math.min(start + 100_000, exportRows) - 1]
      )
    }
    await db.raw('ANALYZE contacts')
  } finally {
    await db.destroy()
  }
}

/** GET /contacts as CSV, read as it streams: rows and time. */
function exportCsv(base: string, headers: Record<string, string>): Promise<{ rows: number; bytes: number; ms: number }> {
  const start = performance.now()
  return new Promise((resolve, reject) => {
    http.get(`${base}/contacts`, { headers: { ...headers, accept: 'text/csv' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`export: ${res.statusCode}`))
      let newlines = 0
      let bytes = 0
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines++
      })
      res.on('end', () => resolve({ rows: newlines - 1, bytes, ms: performance.now() - start }))
      res.on('error', reject)
    }).on('error', reject)
  })
}

async function main() {
  log(`scale ${scale}: import ${importRows} rows, export ${exportRows} rows; database ${databaseName}`)
  const databaseUrl = await freshDatabase()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-bench-import-'))
  const port = await freePort()
  const server = await startServer('service', ['node', ...serviceScript(process.cwd())], port, serviceEnvironment(databaseUrl, dataDir), '/health', path.join(dataDir, 'service.log'))
  try {
    const importer = await tenant(server.url, 'import')
    const file = path.join(dataDir, 'contacts.csv')
    writeCsv(file)
    const rss = sampler(() => rssMb(server.child.pid!))
    const imported = await importFile(server.url, importer.headers, file)
    const importRss = rss.stop()
    if (imported.record.status !== 'completed' || imported.record.rows_created !== importRows) throw new Error(`import ended ${JSON.stringify(imported.record)}`)
    const importRate = importRows / (imported.runMs / 1000)
    const companies = (await send(server.url, { method: 'GET', path: '/companies?$limit=100', headers: importer.headers })).body.data.map((c: any) => c.id)
    const singles = await singlesRate(server.url, importer.headers, companies)
    const peakRss = server.peakRssMb()

    const exporter = await tenant(server.url, 'export')
    await fillForExport(databaseUrl, exporter.organizationId)
    const exportSampler = sampler(() => rssMb(server.child.pid!))
    const exported = await exportCsv(server.url, exporter.headers)
    const exportRss = exportSampler.stop()
    if (exported.rows !== exportRows) throw new Error(`export answered ${exported.rows} rows of ${exportRows}`)

    const lines = [
      `| measure | value | target |`,
      `|---|---|---|`,
      `| import: upload + preview of ${importRows} rows | ${(imported.previewMs / 1000).toFixed(1)} s | |`,
      `| import: run | ${(imported.runMs / 1000).toFixed(1)} s, ${Math.round(importRate)} rows/s | |`,
      `| single POST /contacts (${singles.rows} in ${singlesSeconds.toFixed(0)} s, ${singlesClients} clients) | ${Math.round(singles.perSecond)} rows/s | |`,
      `| import run / singles | ${(importRate / singles.perSecond).toFixed(1)}x | >= 5x |`,
      `| import incl. preview / singles | ${((importRows / ((imported.previewMs + imported.runMs) / 1000)) / singles.perSecond).toFixed(1)}x | |`,
      `| service peak RSS (whole run up to here) | ${peakRss} MB | < 250 MB |`,
      `| RSS sampled during the import | ${Math.min(...importRss)}-${Math.max(...importRss)} MB | |`,
      `| export of ${exportRows} contacts (${(exported.bytes / 1e6).toFixed(0)} MB of CSV) | ${(exported.ms / 1000).toFixed(1)} s, ${Math.round(exported.rows / (exported.ms / 1000))} rows/s | |`,
      `| RSS sampled during the export | ${Math.min(...exportRss)}-${Math.max(...exportRss)} MB (${exportRss.length} samples) | flat |`
    ]
    console.log(lines.join('\n'))
  } finally {
    await server.stop()
    if (!flags.verbose) fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
