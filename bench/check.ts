/**
 * The check that keeps the comparisons honest: the same requests, one at a time, to the service
 * and to the bare server, and their JSON compared value for value (key order aside). Writes are
 * compared on the same row: a PATCH of the service's row and then of the bare server's (the plain
 * copy's row first put back to the contact's), a POST creating a row on each side; only the
 * values a write stamps (updated_at; id and created_at of a new row) differ, and those are
 * compared by presence and type.
 */
import type { Knex } from 'knex'
import { send } from './http.js'
import type { BenchRequest } from './http.js'
import { copyContactToPlain } from './database.js'
import { streamOf } from './scenarios.js'
import type { Fixtures, Group } from './scenarios.js'
import { WRITE_EVERY } from './streams.js'

export interface GroupCheck {
  group: string
  requests: number
  mismatched: number
  /** The first mismatched requests, with their first differences. */
  examples: { request: string; differences: string[] }[]
}

const STAMPED: Record<string, Set<string>> = { POST: new Set(['id', 'created_at', 'updated_at']), PATCH: new Set(['updated_at']) }
const EXAMPLES = 5
const DIFFERENCES = 8

/** Every group with a bare side: `perGroup` requests of its stream (a mix: at least two of its writes). */
export async function checkAnswers(
  db: Knex, urls: { service: string; bare: string }, groups: Group[], fixtures: Fixtures, seed: string, perGroup: number
): Promise<GroupCheck[]> {
  const checks: GroupCheck[] = []
  for (const group of groups) {
    const serviceSide = group.sides.find((side) => side.server === 'service')
    const bareSide = group.sides.find((side) => side.server === 'bare')
    if (!serviceSide || !bareSide) continue
    const next = streamOf(serviceSide, fixtures, `${seed}:check:${group.id}`)
    const check: GroupCheck = { group: group.id, requests: 0, mismatched: 0, examples: [] }
    const count = group.id.endsWith('-mix') ? Math.max(perGroup, 2 * WRITE_EVERY) : perGroup
    for (let i = 0; i < count; i++) {
      const request = next()
      const bareRequest = { ...request, path: bareSide.route ? bareSide.route(request.path) : request.path }
      if (request.method === 'PATCH' && bareRequest.path !== request.path) {
        await copyContactToPlain(db, fixtures.organizationId, Number(request.path.split('/').pop()))
      }
      const differences = await compare(urls, request, bareRequest)
      check.requests++
      if (differences.length === 0) continue
      check.mismatched++
      if (check.examples.length < EXAMPLES) check.examples.push({ request: describe(request), differences: differences.slice(0, DIFFERENCES) })
    }
    checks.push(check)
  }
  return checks
}

async function compare(urls: { service: string; bare: string }, request: BenchRequest, bareRequest: BenchRequest): Promise<string[]> {
  const service = await send(urls.service, request)
  const bare = await send(urls.bare, bareRequest)
  const ok = (status: number) => status >= 200 && status < 300
  if (!ok(service.status) || !ok(bare.status) || service.status !== bare.status) {
    const says = (answer: { status: number; body: any }) => `${answer.status}${ok(answer.status) ? '' : ` ${answer.body?.message ?? String(answer.body).slice(0, 120)}`}`
    return [`status: service ${says(service)}, bare ${says(bare)}`]
  }
  const differences: string[] = []
  differencesOf(service.body, bare.body, '', STAMPED[request.method] ?? new Set(), differences)
  return differences
}

/** Where two JSON values differ, as 'path: service value, bare value'; `stamped` keys of the top object are compared by type only. */
function differencesOf(service: unknown, bare: unknown, path: string, stamped: Set<string>, out: string[]) {
  const show = (value: unknown) => (value === undefined ? '(absent)' : JSON.stringify(value)?.slice(0, 80))
  const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)
  if (kind(service) !== kind(bare)) {
    out.push(`${path || '(body)'}: service ${show(service)}, bare ${show(bare)}`)
    return
  }
  if (Array.isArray(service)) {
    const other = bare as unknown[]
    if (service.length !== other.length) out.push(`${path}.length: service ${service.length}, bare ${other.length}`)
    for (let i = 0; i < Math.min(service.length, other.length); i++) differencesOf(service[i], other[i], `${path}[${i}]`, new Set(), out)
    return
  }
  if (service !== null && typeof service === 'object') {
    const other = bare as Record<string, unknown>
    for (const key of new Set([...Object.keys(service), ...Object.keys(other)])) {
      const a = (service as Record<string, unknown>)[key]
      const b = other[key]
      const at = path ? `${path}.${key}` : key
      if (stamped.has(key)) {
        if (kind(a) !== kind(b)) out.push(`${at}: service ${show(a)}, bare ${show(b)}`)
      } else {
        differencesOf(a, b, at, new Set(), out)
      }
    }
    return
  }
  if (service !== bare) out.push(`${path || '(body)'}: service ${show(service)}, bare ${show(bare)}`)
}

const describe = (request: BenchRequest) =>
  `${request.method} ${request.path}${request.body === undefined ? '' : ` ${JSON.stringify(request.body).slice(0, 200)}`}`
