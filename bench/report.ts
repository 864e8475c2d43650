/** The benchmark's table: its comparisons, their targets and whether each was met. */
import type { GroupCheck } from './check.js'
import type { ServerName } from './scenarios.js'
import type { ScaleOrganizations } from './scale.js'

/** What one side measured over its rounds. */
export interface Measured {
  id: string
  title: string
  server: ServerName
  group: string
  ran: boolean
  note?: string
  reqPerSec?: number
  p50Ms?: number
  p99Ms?: number
  /** autocannon's latency distribution (the worse round's), in the JSON only. */
  latency?: { mean: number; p75: number; p90: number; p97_5: number; max: number }
  non2xx?: number
  errors?: number
  timeouts?: number
  requests?: number
  rounds?: number
  /** The server's own CPU time (user + system) per request while measured, in ms. */
  cpuMsPerRequest?: number
  /** The Postgres processes' CPU per request while measured (a database on this machine only). */
  dbCpuMsPerRequest?: number
  /** Seconds after the load until the work it left behind (the contact name index) was done, counted in req/s. */
  catchUpS?: number
  records?: number
}

/**
 * A measurement of a group of its own (not a load compared with another): one figure and its
 * target, as the table shows them, and everything measured for the JSON.
 */
export interface Finding {
  group: string
  scenario: string
  /** The figure with its unit, as the table shows it. */
  figure: string
  target: string
  met: string
  p99?: number
  /** Non-2xx answers, connection errors and timeouts. */
  failures: number
  details: Record<string, unknown>
}

/** A row of the table: a side measured against another (or alone), and its target. */
interface Comparison {
  scenario: string
  subject: string
  reference?: string
  /** The group whose answers the check compared. */
  checked?: string
  minRatio?: number
  /** Records per second instead of requests (batch against single creates). */
  perRecord?: boolean
  minReqPerSec?: number
  maxP99Ms?: number
  /** The target holds for the full-size seed only (the million contacts). */
  fullSizeOnly?: boolean
}

const COMPARISONS: Comparison[] = [
  { scenario: 'POST /contacts against a bare INSERT into a plain copy', subject: 'create', reference: 'create-plain', checked: 'create', minRatio: 0.5 },
  { scenario: 'PATCH /contacts/:id against a bare UPDATE of the plain copy', subject: 'update', reference: 'update-plain', checked: 'update', minRatio: 0.5 },
  { scenario: 'bare INSERT into contacts against into the plain copy (the triggers\' cost)', subject: 'create-contacts', reference: 'create-plain' },
  { scenario: 'bare UPDATE of contacts against of the plain copy (the triggers\' cost)', subject: 'update-contacts', reference: 'update-plain' },
  { scenario: 'POST /contacts against a bare INSERT into contacts', subject: 'create', reference: 'create-contacts' },
  { scenario: 'PATCH /contacts/:id against a bare UPDATE of contacts', subject: 'update', reference: 'update-contacts' },
  { scenario: 'POST /contacts, 100 a request, records/s against single creates', subject: 'batch', reference: 'create', perRecord: true, minRatio: 10 },
  { scenario: 'GET /contacts/:id', subject: 'get', reference: 'get-bare', checked: 'get', minRatio: 0.65 },
  { scenario: 'contacts pages, varied; 1 in 20 a write', subject: 'contacts-mix', reference: 'contacts-mix-bare', checked: 'contacts-mix', minRatio: 0.6 },
  { scenario: 'deals pages with joins, $limit 50, varied; 1 in 20 a write', subject: 'deals-mix', reference: 'deals-mix-bare', checked: 'deals-mix', minRatio: 0.6 },
  { scenario: 'activity weeks with joins, $limit 50, varied; 1 in 20 a write', subject: 'activities-mix', reference: 'activities-mix-bare', checked: 'activities-mix', minRatio: 0.6 },
  { scenario: 'name search, terms of 3-8 letters', subject: 'search', minReqPerSec: 300, maxP99Ms: 150, fullSizeOnly: true },
  { scenario: 'GET /contacts/:id: 100,000 contacts against 10,000', subject: 'scale-get-100k', reference: 'scale-get-10k', minRatio: 0.5 },
  { scenario: 'contacts pages of 25 in an indexed order, $skip to 500: 100,000 contacts against 10,000', subject: 'scale-pages-100k', reference: 'scale-pages-10k', minRatio: 0.5 },
  { scenario: 'name search, 3-8 letters: 100,000 contacts against 10,000', subject: 'scale-search-100k', reference: 'scale-search-10k', minRatio: 0.5 },
  { scenario: 'PATCH /activities, done on 100 ids', subject: 'bulk-done' },
  { scenario: 'GET /conversations, open inbox, joins, $limit 50', subject: 'inbox' },
  { scenario: "GET /conversation-messages-whatsapp, a thread's last 50", subject: 'thread' },
  { scenario: 'GET /contacts, keyset sync page of 100', subject: 'sync', maxP99Ms: 50 },
  { scenario: 'GET /companies/:id, rate limiter on against off', subject: 'limiter-on', reference: 'limiter-off', minRatio: 0.9 }
]

export const RSS_TARGET_MB = 200

/** A target of an absolute figure holds at full size; below it the table says so instead of judging. */
export const judgedAtFullSize = (scale: number, failures: number, holds: boolean) =>
  failures > 0 ? `NO: ${failures} non-2xx` : scale < 1 ? FULL_SIZE_ONLY : holds ? 'yes' : 'NO'

const FULL_SIZE_ONLY = 'n/a below 1,000,000 contacts'

export interface TableRow {
  scenario: string
  serviceReqPerSec?: string
  bareReqPerSec?: string
  ratio?: number
  target: string
  p99: string
  /** The node CPU per request (per record where records are compared) of the sides, in ms. */
  cpu: string
  non2xx: number
  answers: string
  met: string
}

const whole = (n: number | undefined) => (n === undefined ? '' : Math.round(n).toLocaleString('en'))

/** The table's rows: the comparisons of the sides that were measured, the findings of the groups of their own, the peak RSS. */
export function tableRows(measured: Measured[], findings: Finding[], checks: GroupCheck[], peakRssMb: number | undefined, scale: number): TableRow[] {
  const byId = new Map(measured.map((row) => [row.id, row]))
  const rows: TableRow[] = []
  for (const comparison of COMPARISONS) {
    const subject = byId.get(comparison.subject)
    if (!subject) continue
    const reference = comparison.reference ? byId.get(comparison.reference) : undefined
    const rate = (row?: Measured) => (row?.reqPerSec === undefined ? undefined : row.reqPerSec * (comparison.perRecord ? row.records ?? 1 : 1))
    const ratio = rate(subject) && rate(reference) ? rate(subject)! / rate(reference)! : undefined
    const failures = [subject, reference].reduce((sum, row) => sum + (row?.non2xx ?? 0) + (row?.errors ?? 0) + (row?.timeouts ?? 0), 0)
    const check = checks.find((c) => c.group === comparison.checked)
    const targets = [
      comparison.minRatio ? `ratio >= ${comparison.minRatio}` : '',
      comparison.minReqPerSec ? `>= ${comparison.minReqPerSec} req/s` : '',
      comparison.maxP99Ms ? `p99 <= ${comparison.maxP99Ms} ms` : ''
    ].filter(Boolean)
    rows.push({
      scenario: comparison.scenario,
      ...cells(comparison, subject, reference, rate),
      ratio,
      target: targets.join(', ') || '—',
      p99: [subject, reference].filter(Boolean).map((row) => (row!.ran ? String(row!.p99Ms) : '')).join(' / '),
      cpu: [subject, reference].filter(Boolean).map((row) => cpuPer(row!, comparison.perRecord)).join(' / '),
      non2xx: failures,
      answers: !check ? '—' : check.mismatched ? `DIFFER (${check.mismatched} of ${check.requests})` : `same (${check.requests})`,
      met: met(comparison, subject, reference, ratio, failures, targets.length > 0, scale)
    })
  }
  for (const finding of findings) {
    rows.push({
      scenario: finding.scenario, serviceReqPerSec: finding.figure, bareReqPerSec: '—', target: finding.target, p99: finding.p99 === undefined ? '' : String(finding.p99),
      cpu: '', non2xx: finding.failures, answers: '—', met: finding.met
    })
  }
  if (peakRssMb !== undefined) {
    rows.push({
      scenario: 'peak RSS of the service (VmHWM)', serviceReqPerSec: `${peakRssMb} MB`, target: `<= ${RSS_TARGET_MB} MB`, p99: '', cpu: '', non2xx: 0, answers: '—',
      met: peakRssMb <= RSS_TARGET_MB ? 'yes' : 'NO'
    })
  }
  return rows
}

const cpuPer = (row: Measured, perRecord?: boolean) =>
  row.cpuMsPerRequest === undefined ? '' : (row.cpuMsPerRequest / (perRecord ? row.records ?? 1 : 1)).toFixed(2)

/** The figures in their columns: a bare side's under bare, records per second where writes are compared per record. */
function cells(comparison: Comparison, subject: Measured, reference: Measured | undefined, rate: (row?: Measured) => number | undefined) {
  const figure = (row?: Measured) => (!row ? '' : row.ran ? `${whole(rate(row))}${comparison.perRecord ? ' records/s' : ''}` : row.note ?? 'not run')
  if (subject.server === 'bare') return { serviceReqPerSec: '—', bareReqPerSec: `${figure(subject)} against ${figure(reference)}` }
  if (reference && reference.server !== 'bare') return { serviceReqPerSec: `${figure(subject)} against ${figure(reference)}`, bareReqPerSec: '—' }
  return { serviceReqPerSec: figure(subject), bareReqPerSec: reference ? figure(reference) : '—' }
}

function met(comparison: Comparison, subject: Measured, reference: Measured | undefined, ratio: number | undefined, failures: number, targeted: boolean, scale: number) {
  if (!targeted) return '—'
  if (!subject.ran || (comparison.reference && !reference?.ran)) return 'not run'
  if (failures > 0) return `NO: ${failures} non-2xx`
  if (!subject.reqPerSec || (reference && !reference.reqPerSec)) return 'NO: no 2xx answer measured'
  if (comparison.fullSizeOnly && scale < 1) return FULL_SIZE_ONLY
  const holds = [
    comparison.minRatio === undefined || (ratio !== undefined && ratio >= comparison.minRatio),
    comparison.minReqPerSec === undefined || subject.reqPerSec! >= comparison.minReqPerSec,
    comparison.maxP99Ms === undefined || subject.p99Ms! <= comparison.maxP99Ms
  ]
  return holds.every(Boolean) ? 'yes' : 'NO'
}

export function markdownTable(rows: TableRow[]): string[] {
  const lines = [
    '| Scenario | service req/s | bare req/s | ratio | target | p99 ms | CPU ms | non-2xx | answers | met |',
    '|---|---:|---:|---:|---|---:|---:|---:|---|---|'
  ]
  for (const row of rows) {
    const ratio = row.ratio === undefined ? '' : row.ratio.toFixed(2)
    lines.push(`| ${row.scenario} | ${row.serviceReqPerSec ?? ''} | ${row.bareReqPerSec ?? ''} | ${ratio} | ${row.target} | ${row.p99} | ${row.cpu} | ${row.non2xx} | ${row.answers} | ${row.met} |`)
  }
  return lines
}

/** What the columns say, under the table; the sizes of the scale group's organizations where they are not the full-size ones. */
export function legendLines(scaleOrganizations?: ScaleOrganizations): string[] {
  const sizes = scaleOrganizations && scaleOrganizations.larger.contacts !== 100_000
    ? `, here ${scaleOrganizations.larger.contacts.toLocaleString('en')} against ${scaleOrganizations.smaller.contacts.toLocaleString('en')}`
    : ''
  return [
    'ratio: the first figure over the second: the service over the bare server (batch: records/s against single creates; the triggers\' rows: ' +
      `contacts against the plain copy; 100,000 contacts against 10,000: the organization of 100,000 contacts over the one of 10,000${sizes}; ` +
      'limiter: on against off). req/s counts 2xx answers, the mean of the rounds; p99 is the worse round\'s, in the same order; ' +
      'CPU ms: node\'s CPU per request (per record for the batch), in the same order.',
    'non-2xx: non-2xx answers, connection errors and timeouts of both sides; a row with any is not met. answers: requests of the check answered alike (see below).'
  ]
}

/** The check's mismatches, as lines under the table. */
export function checkLines(checks: GroupCheck[]): string[] {
  const compared = checks.reduce((sum, check) => sum + check.requests, 0)
  const mismatched = checks.reduce((sum, check) => sum + check.mismatched, 0)
  const lines = [`Answers compared (service against bare, key order aside): ${compared} requests, ${mismatched} differing.`]
  for (const check of checks.filter((c) => c.mismatched)) {
    lines.push('', `${check.group}: ${check.mismatched} of ${check.requests} differ, e.g.`)
    for (const example of check.examples) {
      lines.push(`- ${example.request}`)
      for (const difference of example.differences) lines.push(`  - ${difference}`)
    }
  }
  return lines
}
