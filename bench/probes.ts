/**
 * The groups that are not a load compared with another: each sends its own sequence of requests
 * to the service and reports figures against their targets (see bench/README.md).
 */
import { performance } from 'node:perf_hooks'
import autocannon from 'autocannon'
import type { Knex } from 'knex'
import { autocannonRequest, send } from './http.js'
import type { BenchRequest } from './http.js'
import { idleAfter } from './idle.js'
import { judgedAtFullSize } from './report.js'
import type { Finding } from './report.js'
import type { Fixtures } from './scenarios.js'
import { CREATED_EMAIL_PREFIX, Draw, SEARCH_TERMS, createContact, createContacts, largeOrganization, nameSearch, searchContacts } from './streams.js'
import type { StreamFactory } from './streams.js'

/** What a group of its own works with: the service, the benchmark database and the run's settings. */
export interface ProbeContext {
  /** The service's base URL. */
  url: string
  db: Knex
  databaseUrl: string
  fixtures: Fixtures
  seed: string
  connections: number
  scale: number
  log: (message: string) => void
}

export type Probe = (context: ProbeContext) => Promise<Finding[]>

const TERM_PASSES = 3
const SLOWEST_TERM_MS = 500
const IMPORT_CLIENTS = 20
const BATCH = 100
const FIRST_SEARCH_MS = 1_000
const SEARCH_LOAD_S = 3
const IDLE_WITHIN_S = 30
/** The idle wait: quiet this long on end counts as idle; a database still working after the longest wait is reported as such. */
const QUIET_MS = 2_000
const LONGEST_WAIT_MS = 120_000

const whole = (n: number) => Math.round(n).toLocaleString('en')
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
/** Contacts to import at the seed's scale (at full size as given; at least `least`). */
const atScale = (contacts: number, scale: number, least: number) => Math.max(least, Math.round(contacts * Math.min(scale, 1)))

/** One request alone, and how long its answer took. */
async function timed(url: string, request: BenchRequest): Promise<{ ms: number; ok: boolean }> {
  const started = performance.now()
  const answer = await send(url, request).catch(() => ({ status: 0 }))
  return { ms: performance.now() - started, ok: answer.status >= 200 && answer.status < 300 }
}

/**
 * search-terms: every distinct term of the search streams, one request at a time, in passes over
 * the list (a first one to warm up, then TERM_PASSES measured); a term's latency is the median of
 * its measured answers, and the row reports the slowest term.
 */
export const searchTermsAlone: Probe = async ({ url, fixtures, scale, log }) => {
  const terms = [...new Set(SEARCH_TERMS)]
  const tenant = largeOrganization(fixtures)
  const latencies = new Map(terms.map((term) => [term, [] as number[]]))
  let failures = 0
  log(`search-terms: ${terms.length} terms one at a time, a pass to warm up and ${TERM_PASSES} measured`)
  for (let pass = 0; pass <= TERM_PASSES; pass++) {
    for (const term of terms) {
      const answer = await timed(url, nameSearch(tenant, term))
      if (!answer.ok) failures++
      if (pass > 0) latencies.get(term)!.push(answer.ms)
    }
  }
  const byTerm = terms.map((term) => ({ term, medianMs: median(latencies.get(term)!), ms: latencies.get(term)! })).sort((a, b) => b.medianMs - a.medianMs)
  const slowest = byTerm[0]
  return [{
    group: 'search-terms',
    scenario: `name search, each of its ${terms.length} terms alone: the slowest (median of ${TERM_PASSES})`,
    figure: `${whole(slowest.medianMs)} ms ('${slowest.term}')`,
    target: `<= ${whole(SLOWEST_TERM_MS)} ms`,
    met: judgedAtFullSize(scale, failures, slowest.medianMs <= SLOWEST_TERM_MS),
    failures,
    details: { passes: TERM_PASSES, terms: byTerm }
  }]
}

/**
 * search-after-import: 20,000 POST /contacts into the large organization from 20 clients; as the
 * last answer arrives, one name search alone, then a search load of SEARCH_LOAD_S seconds whose
 * answers are counted by when they arrived. The imported contacts are removed afterwards.
 */
export const searchAfterImport: Probe = async (context) => {
  const { url, fixtures, scale, connections } = context
  const contacts = atScale(20_000, scale, 200)
  const imported = await importContacts(context, 'search-after-import', createContact, contacts)
  const term = SEARCH_TERMS[0]
  const first = await timed(url, nameSearch(largeOrganization(fixtures), term))
  const load = await searchLoadFromStart(context)
  await imported.remove()
  const firstSecond = load.answeredWithin(1_000)
  const loadFailures = load.result.non2xx + load.result.errors + load.result.timeouts
  const importFailures = imported.failures + (first.ok ? 0 : 1)
  return [
    {
      group: 'search-after-import',
      scenario: `first name search ('${term}') right after ${whole(contacts)} POST /contacts from ${IMPORT_CLIENTS} clients`,
      figure: `${whole(first.ms)} ms (imported at ${whole(imported.recordsPerSec)} req/s)`,
      target: `<= ${whole(FIRST_SEARCH_MS)} ms`,
      met: judgedAtFullSize(scale, importFailures, first.ms <= FIRST_SEARCH_MS),
      failures: importFailures,
      details: { contacts, importRecordsPerSec: imported.recordsPerSec, importFailures: imported.failures, term, firstSearchMs: first.ms }
    },
    {
      group: 'search-after-import',
      scenario: `a search load started then, ${connections} connections: answers in its first second / its first ${SEARCH_LOAD_S} s`,
      figure: `${whole(firstSecond)} / ${whole(load.answeredWithin(SEARCH_LOAD_S * 1_000))}`,
      target: '>= 1 in the first second',
      p99: load.result.latency.p99,
      met: judgedAtFullSize(scale, loadFailures, firstSecond >= 1),
      failures: loadFailures,
      details: { answeredBySecond: load.bySecond(), p50Ms: load.result.latency.p50, p99Ms: load.result.latency.p99 }
    }
  ]
}

/**
 * idle-after-import: 100,000 contacts into the large organization through POST /contacts with
 * arrays of 100 from 20 clients, then the seconds from the last answer until the database is idle
 * (bench/idle.ts). The imported contacts are removed afterwards.
 */
export const idleAfterImport: Probe = async (context) => {
  const { db, databaseUrl, scale } = context
  const contacts = atScale(100_000, scale, IMPORT_CLIENTS * BATCH)
  const imported = await importContacts(context, 'idle-after-import', createContacts(BATCH), contacts / BATCH, BATCH)
  const idleMs = await idleAfter(db, databaseUrl, { since: imported.lastAnswerAt, quietMs: QUIET_MS, maxMs: LONGEST_WAIT_MS })
  await imported.remove()
  const idleS = idleMs === undefined ? undefined : idleMs / 1000
  return [{
    group: 'idle-after-import',
    scenario: `database idle after ${whole(contacts)} contacts created in arrays of ${BATCH} from ${IMPORT_CLIENTS} clients: seconds from the last answer`,
    figure: `${idleS === undefined ? `> ${LONGEST_WAIT_MS / 1000}` : idleS.toFixed(1)} s (imported at ${whole(imported.recordsPerSec)} records/s)`,
    target: `<= ${IDLE_WITHIN_S} s`,
    met: judgedAtFullSize(scale, imported.failures, idleS !== undefined && idleS <= IDLE_WITHIN_S),
    failures: imported.failures,
    details: { contacts, importRecordsPerSec: imported.recordsPerSec, idleS, quietS: QUIET_MS / 1000 }
  }]
}

/**
 * Creates contacts through the service from IMPORT_CLIENTS clients at once, `requests` requests of
 * the stream in all; `remove` deletes them again (and vacuums contacts, so that what follows
 * finds no dead rows of them).
 */
async function importContacts(context: ProbeContext, name: string, stream: StreamFactory, requests: number, recordsPerRequest = 1) {
  const { db, url, fixtures, seed, log } = context
  const firstId = Number((await db.raw('SELECT coalesce(max(id), 0) + 1 AS id FROM contacts')).rows[0].id)
  log(`${name}: ${whole(requests * recordsPerRequest)} contacts in ${whole(requests)} POST /contacts from ${IMPORT_CLIENTS} clients`)
  const next = stream(fixtures, new Draw(`${seed}:${name}`))
  const result = await autocannon({ url, connections: Math.min(IMPORT_CLIENTS, requests), pipelining: 1, amount: requests, timeout: 60, requests: [autocannonRequest(next)] })
  return {
    lastAnswerAt: Date.now(),
    recordsPerSec: (result['2xx'] * recordsPerRequest) / Math.max(result.duration, 0.001),
    failures: result.non2xx + result.errors + result.timeouts,
    remove: async () => {
      await db.raw('DELETE FROM contacts WHERE organization_id = ? AND id >= ? AND email LIKE ?', [fixtures.organizationId, firstId, `${CREATED_EMAIL_PREFIX}%`])
      await db.raw('VACUUM (ANALYZE) contacts')
    }
  }
}

/** A search load of SEARCH_LOAD_S seconds from now, its answers (2xx) counted by the time they arrived. */
async function searchLoadFromStart({ url, fixtures, seed, connections, log }: ProbeContext) {
  log(`search-after-import: a search load at ${connections} connections for ${SEARCH_LOAD_S} s`)
  const next = searchContacts(fixtures, new Draw(`${seed}:search-after-import:load`))
  const arrivals: number[] = []
  const started = Date.now()
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url, connections, pipelining: 1, duration: SEARCH_LOAD_S, requests: [autocannonRequest(next)] },
      (error, done) => (error ? reject(error) : resolve(done))
    )
    instance.on('response', (_client, status) => {
      if (status >= 200 && status < 300) arrivals.push(Date.now() - started)
    })
  })
  return {
    result,
    answeredWithin: (ms: number) => arrivals.filter((at) => at < ms).length,
    bySecond: () => Array.from({ length: SEARCH_LOAD_S }, (_, second) => arrivals.filter((at) => Math.floor(at / 1000) === second).length)
  }
}
