import crypto from 'node:crypto'
import { Readable } from 'node:stream'
import { BadRequest, Conflict, FeathersError, Forbidden } from '@feathersjs/errors'
import { http } from '@feathersjs/transport-commons'
import type { Context, Next } from 'koa'
import type { Knex } from 'knex'
import { hashToken } from '../authentication.js'
import { runInBackground } from '../background.js'
import type { Application, Caller, HookContext } from '../declarations.js'
import { redactUrl } from '../logger.js'
import { secretFieldsOf, withoutSecrets } from '../secret-fields.js'

/**
 * Idempotency-Key (Stripe's contract), for every POST and PATCH of the API:
 *
 * 1. The key is claimed before the request runs: one INSERT of a 'running' row, unique per
 *    (scope, key), the scope being the caller (ownerOf). A repeat finds the row: a different
 *    method, path or body is a 422, a finished one is replayed (stored status and body,
 *    Idempotent-Replayed: true), a running one is a 409.
 * 2. The answer is stored with the key. A tenant resource's write stores it inside its own write
 *    transaction (writeTransaction, src/hooks/write-transaction.ts), so the record and the stored
 *    answer commit together; any other route stores it right after it answered. Its secret
 *    fields (src/secret-fields.ts) are never stored: such an answer is not replayed (409).
 * 3. An error answer releases the key: nothing was written, so the client may try again. So does
 *    a streamed answer (a personal-data export): it is never kept, and a repeat reads again.
 * 4. An answer that carried a person's data is emptied when that person is erased
 *    (docs/privacy.md): the key is kept, and a repeat is a 409 instead of a replay.
 *
 * A claim whose process died is taken over once its lease has run out.
 */

const TABLE = 'idempotency_keys'
const HEADER = 'idempotency-key'
const REPLAYED_HEADER = 'Idempotent-Replayed'
const CLAIM_LEASE_S = 60
const PRINTABLE = /^[\x20-\x7E]{1,255}$/
// Without credentials the key is all that tells one sender from another: long enough not to be guessed.
const MIN_ANONYMOUS_KEY_LENGTH = 32

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
  request_hash: string
  caller_rights: string | null
  status: 'running' | 'done'
  status_code: number | null
  response_body: unknown
  secrets_withheld: boolean
  answer_erased_at: Date | null
  locked_at: Date
  expires_at: Date
}

/** What identifies a request under its key: the method, the path as it may be kept (no token in it), and a hash of the whole path and body. */
interface Fingerprint {
  method: string
  path: string
  requestHash: string
}

/** Whose key it is, and what the caller may do where the request acts (a replay needs the same). */
interface KeyOwner {
  scope: string
  organizationId: number | null
  rights: string | null
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

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex')

/** The caller's role where the request acts, and whether the key may only read: what its authorization depended on. */
const rightsIn = (caller: Caller, organizationId: number) =>
  `${caller.roles.get(organizationId) ?? 'none'}${caller.apiKeyReadOnly ? ', read-only key' : ''}`

/**
 * Whose key it is: the caller, so that nobody else can replay its answer or take its key first.
 * - an API key: that key (its organization for the row), with its role and scopes there;
 * - a person's token: the person, with their role in the organization the request names
 *   (organization_id in the body or query), if any;
 * - a web-chat visitor (X-Visitor-Token, no credentials): the visitor token's hash;
 * - no credentials at all (sign-up, public booking, a web-chat session, an invitation's
 *   acceptance): the key itself, which must then be long enough not to be guessed.
 */
async function ownerOf(app: Application, ctx: Context, key: string): Promise<KeyOwner> {
  const authentication = await app.service('authentication').parse(ctx.req, ctx.res, 'jwt', 'api-key')
  if (!authentication) return anonymousOwner(ctx, key)
  // Authenticated here once, for the key's scope; the service call does not authenticate again.
  const { accessToken: _token, ...result } = await app.service('authentication').authenticate(authentication, {}, 'jwt', 'api-key')
  ctx.feathers = { ...ctx.feathers, authentication, ...result, authenticated: true, authenticatedBeforeBody: true }
  const caller = (result as any).caller as Caller
  if (caller.apiKeyId !== undefined) {
    const organizationId = caller.apiKeyOrganizationId!
    return { scope: `api-key:${caller.apiKeyId}`, organizationId, rights: rightsIn(caller, organizationId) }
  }
  const named = Number((ctx.request as any).body?.organization_id ?? ctx.query.organization_id)
  const organizationId = Number.isSafeInteger(named) && caller.roles.has(named) ? named : null
  return { scope: `user:${caller.userId}`, organizationId, rights: organizationId === null ? null : rightsIn(caller, organizationId) }
}

function anonymousOwner(ctx: Context, key: string): KeyOwner {
  const visitorToken = ctx.get('x-visitor-token')
  if (visitorToken) return { scope: `visitor:${hashToken(visitorToken)}`, organizationId: null, rights: null }
  if (key.length < MIN_ANONYMOUS_KEY_LENGTH) {
    throw keyError(`must be at least ${MIN_ANONYMOUS_KEY_LENGTH} characters on a request without credentials (a random UUID)`)
  }
  return { scope: 'anonymous', organizationId: null, rights: null }
}

/** The stored answer of a finished key, or why the request may not run now. */
function answerOf(row: KeyRow, fingerprint: Fingerprint, rights: string | null, ctx: Context) {
  if (row.method !== fingerprint.method || row.path !== fingerprint.path || row.request_hash !== fingerprint.requestHash) {
    throw new Unprocessable('This Idempotency-Key was already used for a different request', {
      errors: { idempotency_key: 'was already used with another method, path or body; send a new key for a new request' }
    })
  }
  if (row.caller_rights !== rights) {
    throw new Forbidden('Your role or your API key\'s scopes changed since this Idempotency-Key was first used: its answer is not replayed. Send the request with a new key')
  }
  if (row.status === 'running') {
    throw new Conflict('A request with this Idempotency-Key is still running; retry once it has answered')
  }
  if (row.answer_erased_at) {
    throw new Conflict('The request with this Idempotency-Key succeeded, but its answer held personal data that has been erased since, so it cannot be replayed', {
      errors: { idempotency_key: 'was used by a request that succeeded; its answer was erased with the person it named' }
    })
  }
  if (row.secrets_withheld) {
    throw new Conflict('The request with this Idempotency-Key succeeded, but its answer held a secret that is shown only once and is not kept, so it cannot be replayed', {
      errors: { idempotency_key: 'was used by a request that succeeded; its secret was shown once, in the first answer' }
    })
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
async function claim(db: Knex, ctx: Context, owner: KeyOwner, key: string, ttlS: number, fingerprint: Fingerprint): Promise<IdempotencyClaim | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db.raw(
      `INSERT INTO ${TABLE} (scope, organization_id, caller_rights, key, method, path, request_hash, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))
       ON CONFLICT (scope, key) DO NOTHING
       RETURNING id, locked_at`,
      [owner.scope, owner.organizationId, owner.rights, key, fingerprint.method, fingerprint.path, fingerprint.requestHash, ttlS]
    )
    if (inserted.rows.length) return { id: Number(inserted.rows[0].id), lockedAt: inserted.rows[0].locked_at }
    const row: KeyRow | undefined = await db(TABLE)
      .where({ scope: owner.scope, key })
      .first('*', db.raw('expires_at <= now() AS expired'), db.raw(`locked_at <= now() - make_interval(secs => ${CLAIM_LEASE_S}) AS abandoned`))
    if (!row) continue
    if ((row as any).expired) {
      await db(TABLE).where({ id: row.id }).where('expires_at', '<=', db.fn.now()).delete()
      continue
    }
    if (row.status === 'running' && (row as any).abandoned) {
      const [taken] = await db(TABLE)
        .where({ id: row.id, status: 'running', locked_at: row.locked_at })
        .update({ locked_at: db.fn.now(), caller_rights: owner.rights, method: fingerprint.method, path: fingerprint.path, request_hash: fingerprint.requestHash })
        .returning(['id', 'locked_at'])
      if (taken) return { id: Number(taken.id), lockedAt: taken.locked_at }
      continue
    }
    answerOf(row, fingerprint, owner.rights, ctx)
    return null
  }
  throw new Conflict('A request with this Idempotency-Key is still running; retry once it has answered')
}

/**
 * Stores the answer with the key: inside the write's transaction when given one. Throws (so
 * that the write rolls back) when the claim is no longer this request's. An answer that holds
 * secret fields is not kept at all, only the fact that it was withheld.
 */
export async function storeIdempotentAnswer(db: Knex | Knex.Transaction, claimed: IdempotencyClaim, status: number, body: unknown, secretFields: readonly string[]) {
  const { withheld } = withoutSecrets(body, secretFields)
  const kept = withheld || body === undefined ? null : JSON.stringify(body)
  const updated = await db(TABLE)
    .where({ id: claimed.id, status: 'running', locked_at: claimed.lockedAt })
    .update({ status: 'done', status_code: status, response_body: kept, secrets_withheld: withheld })
    .returning('id')
  if (updated.length !== 1) throw new Conflict('This Idempotency-Key was taken over by another request')
  claimed.stored = true
}

/** Inside a tenant write's transaction: stores the answer the call is about to give, if the request carries a key. */
export async function storeAnswerOfCall(trx: Knex.Transaction, context: HookContext) {
  const claimed = context.params.idempotency
  if (!claimed || claimed.stored || !context.params.provider) return
  const { status, body } = http.getResponse(context)
  await storeIdempotentAnswer(trx, claimed, status, body, secretFieldsOf(context.self))
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
  const owner = await ownerOf(app, ctx, header)
  const serviceMethod = ctx.get(http.METHOD_HEADER)
  // A token in the path (a booking's manage link) is kept out of the row, but still tells requests apart.
  const fingerprint = {
    method: serviceMethod ? `${ctx.method} ${serviceMethod}` : ctx.method,
    path: redactUrl(ctx.url),
    requestHash: sha256(canonicalJson({ path: ctx.url, body: (ctx.request as any).body }))
  }
  const claimed = await claim(db, ctx, owner, header, app.get('idempotencyTtlS'), fingerprint)
  if (!claimed) return
  ctx.feathers = { ...ctx.feathers, idempotency: claimed }
  try {
    await next()
  } catch (error) {
    await release(db, claimed)
    throw error
  }
  if (claimed.stored) return
  if (ctx.status >= 200 && ctx.status < 300 && !(ctx.body instanceof Readable)) await storeIdempotentAnswer(db, claimed, ctx.status, ctx.body, secretFieldsOf(app.lookup(ctx.path)?.service))
  else await release(db, claimed)
}

/** Expired keys are deleted in the background, every IDEMPOTENCY_TTL_S or hour, whichever is shorter. */
export const pruneExpiredKeys = (app: Application) =>
  runInBackground(app, {
    name: 'pruning idempotency keys',
    intervalMs: Math.min(app.get('idempotencyTtlS'), 3600) * 1000,
    pass: () => pruneIdempotencyKeys(app.get('backgroundKnex'))
  })
