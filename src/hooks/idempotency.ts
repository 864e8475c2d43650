import crypto from 'node:crypto'
import { BadRequest, Conflict, FeathersError } from '@feathersjs/errors'
import { http } from '@feathersjs/transport-commons'
import type { Context, Next } from 'koa'
import type { Knex } from 'knex'
import type { Application, HookContext } from '../declarations.js'

/**
 * Idempotency-Key (Stripe's contract), for every POST and PATCH of the API:
 *
 * 1. The key is claimed before the request runs: one INSERT of a 'running' row, unique per
 *    (scope, key). A repeat finds the row: a different method, path or body is a 422, a finished
 *    one is replayed (stored status and body, Idempotent-Replayed: true), a running one is a 409.
 * 2. The answer is stored with the key. A tenant resource's write stores it inside its own write
 *    transaction (writeTransaction, src/hooks/write-transaction.ts), so the record and the stored
 *    answer commit together; any other route stores it right after it answered.
 * 3. An error answer releases the key: nothing was written, so the client may try again.
 *
 * A claim whose process died is taken over once its lease has run out.
 */

const TABLE = 'idempotency_keys'
const HEADER = 'idempotency-key'
const REPLAYED_HEADER = 'Idempotent-Replayed'
const CLAIM_LEASE_S = 60
const PRINTABLE = /^[\x20-\x7E]{1,255}$/

/** The claim of one request on its key, passed to the service call as params.idempotency. */
export interface IdempotencyClaim {
  id: number
  /** The claim's token: storing or releasing only works while the row is still this claim's. */
  lockedAt: Date
  /** Set once the answer is stored (by the write transaction, or after the response). */
  stored?: boolean
}

declare module '@feathersjs/feathers' {
  interface Params {
    /** The request's Idempotency-Key claim; only the external call of that request stores its answer. */
    idempotency?: IdempotencyClaim
  }
}

interface KeyRow {
  id: number
  method: string
  path: string
  body_hash: string
  status: 'running' | 'done'
  status_code: number | null
  response_body: unknown
  locked_at: Date
  expires_at: Date
}

class Unprocessable extends FeathersError {
  constructor(message: string, data: unknown) {
    super(message, 'Unprocessable', 422, 'unprocessable', data)
  }
}

const keyError = (message: string) => new BadRequest('Validation failed', { errors: { idempotency_key: message } })

/** Object keys sorted at every level, so that {"a":1,"b":2} and {"b":2,"a":1} are the same body. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as any)[key])}`)
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value ?? null)
}

const bodyHash = (body: unknown) => crypto.createHash('sha256').update(canonicalJson(body)).digest('hex')

/**
 * Whose key it is. An API key's organization; a person's token: the organization the request
 * names (organization_id in the body or query), else the person; no credentials (the public
 * booking routes): the route itself, which names its booking link.
 */
async function scopeOf(app: Application, ctx: Context): Promise<{ scope: string; organizationId: number | null }> {
  const authentication = await app.service('authentication').parse(ctx.req, ctx.res, 'jwt', 'api-key')
  if (!authentication) return { scope: 'public', organizationId: null }
  // Authenticated here once, for the key's scope; the service call does not authenticate again.
  const { accessToken: _token, ...result } = await app.service('authentication').authenticate(authentication, {}, 'jwt', 'api-key')
  ctx.feathers = { ...ctx.feathers, authentication, ...result, authenticated: true, authenticatedBeforeBody: true }
  const caller = (result as any).caller
  if (caller?.apiKeyOrganizationId !== undefined) return { scope: `organization:${caller.apiKeyOrganizationId}`, organizationId: caller.apiKeyOrganizationId }
  const named = Number((ctx.request as any).body?.organization_id ?? ctx.query.organization_id)
  if (Number.isSafeInteger(named) && named > 0 && caller?.roles?.has(named)) return { scope: `organization:${named}`, organizationId: named }
  return { scope: `user:${(result as any).user?.id}`, organizationId: null }
}

/** The stored answer of a finished key, or why the request may not run now. */
function answerOf(row: KeyRow, fingerprint: { method: string; path: string; bodyHash: string }, ctx: Context) {
  if (row.method !== fingerprint.method || row.path !== fingerprint.path || row.body_hash !== fingerprint.bodyHash) {
    throw new Unprocessable('This Idempotency-Key was already used for a different request', {
      errors: { idempotency_key: 'was already used with another method, path or body; send a new key for a new request' }
    })
  }
  if (row.status === 'running') {
    throw new Conflict('A request with this Idempotency-Key is still running; retry once it has answered')
  }
  ctx.status = row.status_code ?? 200
  ctx.body = row.response_body ?? undefined
  ctx.set(REPLAYED_HEADER, 'true')
}

/**
 * Claims (scope, key) for this request. Returns the claim, or null when the request was
 * answered from the stored row (replay). An expired row is deleted and the key claimed anew; a
 * running row whose lease has run out (its process died) is taken over.
 */
async function claim(db: Knex, ctx: Context, values: { scope: string; organization_id: number | null; key: string }, ttlS: number, fingerprint: { method: string; path: string; bodyHash: string }): Promise<IdempotencyClaim | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db.raw(
      `INSERT INTO ${TABLE} (scope, organization_id, key, method, path, body_hash, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))
       ON CONFLICT (scope, key) DO NOTHING
       RETURNING id, locked_at`,
      [values.scope, values.organization_id, values.key, fingerprint.method, fingerprint.path, fingerprint.bodyHash, ttlS]
    )
    if (inserted.rows.length) return { id: Number(inserted.rows[0].id), lockedAt: inserted.rows[0].locked_at }
    const row: KeyRow | undefined = await db(TABLE)
      .where({ scope: values.scope, key: values.key })
      .first('*', db.raw('expires_at <= now() AS expired'), db.raw(`locked_at <= now() - make_interval(secs => ${CLAIM_LEASE_S}) AS abandoned`))
    if (!row) continue
    if ((row as any).expired) {
      await db(TABLE).where({ id: row.id }).where('expires_at', '<=', db.fn.now()).delete()
      continue
    }
    if (row.status === 'running' && (row as any).abandoned) {
      const [taken] = await db(TABLE)
        .where({ id: row.id, status: 'running', locked_at: row.locked_at })
        .update({ locked_at: db.fn.now(), method: fingerprint.method, path: fingerprint.path, body_hash: fingerprint.bodyHash })
        .returning(['id', 'locked_at'])
      if (taken) return { id: Number(taken.id), lockedAt: taken.locked_at }
      continue
    }
    answerOf(row, fingerprint, ctx)
    return null
  }
  throw new Conflict('A request with this Idempotency-Key is still running; retry once it has answered')
}

/**
 * Stores the answer with the key: inside the write's transaction when given one. Throws (so
 * that the write rolls back) when the claim is no longer this request's.
 */
export async function storeIdempotentAnswer(db: Knex | Knex.Transaction, claimed: IdempotencyClaim, status: number, body: unknown) {
  const updated = await db(TABLE)
    .where({ id: claimed.id, status: 'running', locked_at: claimed.lockedAt })
    .update({ status: 'done', status_code: status, response_body: body === undefined ? null : JSON.stringify(body) })
    .returning('id')
  if (updated.length !== 1) throw new Conflict('This Idempotency-Key was taken over by another request')
  claimed.stored = true
}

/** Inside a tenant write's transaction: stores the answer the call is about to give, if the request carries a key. */
export async function storeAnswerOfCall(trx: Knex.Transaction, context: HookContext) {
  const claimed = context.params.idempotency
  if (!claimed || claimed.stored || !context.params.provider) return
  const { status, body } = http.getResponse(context)
  await storeIdempotentAnswer(trx, claimed, status, body)
}

async function release(db: Knex, claimed: IdempotencyClaim) {
  await db(TABLE).where({ id: claimed.id, status: 'running', locked_at: claimed.lockedAt }).delete()
}

/** Deletes the keys whose time is up. */
export async function pruneIdempotencyKeys(db: Knex): Promise<number> {
  const pruned = await db(TABLE).where('expires_at', '<=', db.fn.now()).delete().returning('id')
  return pruned.length
}

// A login writes nothing, and its answer is a credential that must not be kept in a table; /mcp is
// a protocol session (its tool calls are JSON-RPC messages, not one request and one answer).
export const NOT_IDEMPOTENT_PATHS = new Set(['/authentication', '/mcp'])

/** Koa middleware of every POST and PATCH that carries an Idempotency-Key. */
export const idempotency = (app: Application) => (ctx: Context, next: Next) =>
  (ctx.method !== 'POST' && ctx.method !== 'PATCH') || ctx.headers[HEADER] === undefined || NOT_IDEMPOTENT_PATHS.has(ctx.path)
    ? next()
    : answerIdempotently(app, ctx, next)

async function answerIdempotently(app: Application, ctx: Context, next: Next) {
  const header = ctx.get(HEADER)
  if (!PRINTABLE.test(header)) throw keyError('must be 1 to 255 printable characters')
  const db = app.get('knex')
  const { scope, organizationId } = await scopeOf(app, ctx)
  const serviceMethod = ctx.get(http.METHOD_HEADER)
  const fingerprint = {
    method: serviceMethod ? `${ctx.method} ${serviceMethod}` : ctx.method,
    path: ctx.url,
    bodyHash: bodyHash((ctx.request as any).body)
  }
  const claimed = await claim(db, ctx, { scope, organization_id: organizationId, key: header }, app.get('idempotencyTtlS'), fingerprint)
  if (!claimed) return
  ctx.feathers = { ...ctx.feathers, idempotency: claimed }
  try {
    await next()
  } catch (error) {
    await release(db, claimed)
    throw error
  }
  if (claimed.stored) return
  if (ctx.status >= 200 && ctx.status < 300) await storeIdempotentAnswer(db, claimed, ctx.status, ctx.body)
  else await release(db, claimed)
}

/** Expired keys are deleted in the background, every IDEMPOTENCY_TTL_S or hour, whichever is shorter. */
export const pruneExpiredKeys = (app: Application) => {
  let timer: NodeJS.Timeout | undefined
  const intervalMs = Math.min(app.get('idempotencyTtlS'), 3600) * 1000
  app.hooks({
    setup: [
      async (_context: HookContext, next: () => Promise<void>) => {
        await next()
        timer = setInterval(() => {
          pruneIdempotencyKeys(app.get('knex')).catch((error) => app.get('logger').warn({ err: error }, 'pruning idempotency keys failed'))
        }, intervalMs)
        timer.unref()
      }
    ],
    teardown: [
      async (_context: HookContext, next: () => Promise<void>) => {
        clearInterval(timer)
        await next()
      }
    ]
  })
}
