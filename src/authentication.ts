import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { IncomingMessage } from 'node:http'
import { AuthenticationBaseStrategy, AuthenticationService, JWTStrategy } from '@feathersjs/authentication'
import type { AuthenticationRequest, AuthenticationResult } from '@feathersjs/authentication'
import { LocalStrategy } from '@feathersjs/authentication-local'
import { NotAuthenticated } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { LRUCache } from 'lru-cache'
import type { Application, Caller, Role } from './declarations.js'
import { throttleFailedLogins } from './rate-limit/login-throttle.js'
import { validateLogin } from './authentication.schema.js'
import { KeyInvalidation } from './key-invalidation.js'
import { noFilters } from './validators.js'
import { checkAuthSecret } from './startup.js'

declare module './declarations.js' {
  interface ServiceTypes {
    authentication: AuthenticationService
  }
}

export const API_KEY_PREFIX = 'crm_'
const LAST_USED_RESOLUTION_MS = 60_000
/**
 * A verified key is trusted this long before the database is asked again (one read per key per
 * few seconds instead of one per request; see docs/performance.md). Changes made through this
 * instance end the trust at once; another instance sees them within this delay.
 */
const VERIFIED_KEY_TTL_MS = 5_000
const VERIFIED_KEYS_MAX = 10_000
const KEY_INVALIDATING_SERVICES = ['api-keys', 'organizations-users', 'users', 'organizations'] as const

/** A new key: a recognisable prefix, a short public lookup id and 32 random bytes. */
export function generateApiKey() {
  const lookup = crypto.randomBytes(6).toString('base64url').slice(0, 8)
  const secret = crypto.randomBytes(32).toString('base64url')
  const key = `${API_KEY_PREFIX}${lookup}_${secret}`
  return { key, prefix: `${API_KEY_PREFIX}${lookup}`, hash: hashApiKey(key) }
}

// Keys and tokens carry 256 random bits, so a fast hash is as safe as a slow one and costs microseconds.
export const hashToken = (token: string) => crypto.createHash('sha256').update(token).digest('hex')
export const hashApiKey = hashToken

/** A new single-use token (invitations, e-mail verification): 256 random bits, URL-safe. */
export const newToken = () => crypto.randomBytes(32).toString('base64url')

/**
 * The keys that authenticate, expiry aside (see keyExpired): active, not deleted, and whose user
 * is still a member of the key's organization (a key of someone who left is as invalid as an
 * unknown one). As k, with the user as u and the membership as m.
 */
export const liveApiKeys = (db: Knex) =>
  db('api_keys as k')
    .join('users as u', 'u.id', 'k.user_id')
    .join('organizations_users as m', function () {
      this.on('m.organization_id', 'k.organization_id').andOn('m.user_id', 'k.user_id')
    })
    .where('k.active', true)
    .whereNull('k.deleted_at')

export const keyExpired = (row: { expires_at: Date | string | null }) => Boolean(row.expires_at) && new Date(row.expires_at!).getTime() <= Date.now()

/** x-api-key: the caller is the key's user, confined to the key's organization. */
export class ApiKeyStrategy extends AuthenticationBaseStrategy {
  /** The last write of each key's last_used_at, by key id (a key forgotten costs one more write). */
  private lastUsedWrites = new LRUCache<number, number>({ max: VERIFIED_KEYS_MAX })
  private verified = new LRUCache<string, any>({ max: VERIFIED_KEYS_MAX, ttl: VERIFIED_KEY_TTL_MS })
  /** Bumped by every forget, so a lookup that raced with a change is not remembered. */
  private generation = 0

  invalidation?: KeyInvalidation

  /**
   * Any change to a key, a membership, a user or an organization forgets every verified key,
   * here and (through Redis, when configured) on every other instance.
   */
  async setup() {
    const invalidation = (this.invalidation = new KeyInvalidation(this.app as Application))
    const forget = () => {
      this.generation++
      this.verified.clear()
    }
    for (const path of KEY_INVALIDATING_SERVICES) {
      const service = (this.app as Application).service(path)
      for (const event of ['patched', 'updated', 'removed']) {
        service.on(event, () => {
          forget()
          invalidation.announce()
        })
      }
    }
    invalidation.start(forget)
  }

  async parse(req: IncomingMessage) {
    const header = req.headers['x-api-key']
    const apiKey = Array.isArray(header) ? header[0] : header
    return apiKey !== undefined ? { strategy: this.name!, apiKey } : null
  }

  async authenticate(authentication: AuthenticationRequest): Promise<AuthenticationResult> {
    const { apiKey } = authentication
    if (typeof apiKey !== 'string' || !apiKey.startsWith(API_KEY_PREFIX) || apiKey.length > 200) {
      throw new NotAuthenticated('Invalid API key')
    }
    const row = await this.verifiedKey(hashApiKey(apiKey))
    // An expired key is as invalid as an unknown one: checked on every request, so a remembered
    // key stops at its expiry too.
    if (!row || keyExpired(row)) throw new NotAuthenticated('Invalid API key')
    await this.touch(row.id, row.last_used_at)
    const caller: Caller = {
      userId: row.user_id,
      apiKeyOrganizationId: row.organization_id,
      apiKeyId: row.id,
      apiKeyReadOnly: !(row.scopes as string[]).includes('write'),
      roles: new Map([[row.organization_id, row.role as Role]])
    }
    return {
      authentication: { strategy: this.name! },
      user: { id: row.user_id, email: row.email, first_name: row.first_name, last_name: row.last_name },
      apiKey: { id: row.id, organization_id: row.organization_id, user_id: row.user_id },
      caller
    }
  }

  private async verifiedKey(hash: string) {
    const cached = this.verified.get(hash)
    if (cached) return cached
    const generation = this.generation
    const row = await liveApiKeys((this.app as Application).get('knex'))
      .where('k.key_hash', hash)
      .first('k.id', 'k.organization_id', 'k.user_id', 'k.last_used_at', 'k.scopes', 'k.expires_at', 'm.role', 'u.email', 'u.first_name', 'u.last_name')
    if (!row || generation !== this.generation) return row
    this.verified.set(hash, row)
    return row
  }

  /** last_used_at is kept to the minute, so a busy key costs no write per request. */
  private async touch(id: number, lastUsedAt: Date | null) {
    const now = Date.now()
    const last = Math.max(lastUsedAt?.getTime() ?? 0, this.lastUsedWrites.get(id) ?? 0)
    if (now - last < LAST_USED_RESOLUTION_MS) return
    this.lastUsedWrites.set(id, now)
    await (this.app as Application).get('knex')('api_keys').where({ id }).update({ last_used_at: new Date(now) })
  }
}

/**
 * When a token was issued, in milliseconds. `iat` has 1-second resolution, too coarse to tell a
 * token issued just before a password change from one issued just after it, so our tokens also
 * carry `iat_ms` (see AccountAuthenticationService); a token without it counts from its `iat`.
 */
export const tokenIssuedAtMs = (payload: { iat?: number; iat_ms?: unknown }) =>
  typeof payload.iat_ms === 'number' ? payload.iat_ms : (payload.iat ?? 0) * 1000

/**
 * Issues the JWTs: the standard payload plus `iat_ms`, the issue instant in milliseconds. An API
 * key signs a socket in as itself (`create` with {strategy: 'api-key', apiKey}): no JWT is issued
 * for it, since a token would open every organization of the key's user; the socket presents the
 * key again with each call (socketSessions, src/realtime.ts). Over REST the key goes with every
 * request (x-api-key), so there is no session to open.
 */
class AccountAuthenticationService extends AuthenticationService {
  async getPayload(authResult: AuthenticationResult, params: Params) {
    return { ...(await super.getPayload(authResult, params)), iat_ms: Date.now() }
  }

  async create(data: AuthenticationRequest, params: Params = {}) {
    if (data?.strategy !== 'api-key') return super.create(data, params)
    if (!params.connection) throw new NotAuthenticated('An API key is not exchanged for a token: send it with every request in the x-api-key header')
    return this.authenticate(data, params, 'api-key')
  }

  /** Logout: a socket signed in with an API key ends its session as a JWT one does. */
  async remove(id: string | null, params: Params = {}) {
    const { authentication } = params
    if (!authentication) throw new NotAuthenticated('Not authenticated')
    if (authentication.strategy !== 'api-key') return super.remove(id, params)
    if (id !== null) throw new NotAuthenticated('Invalid access token')
    return this.authenticate(authentication, params, 'api-key')
  }
}

interface AccountRow {
  user_id: number
  sessions_valid_after: Date | null
  organization_id: number | null
  role: Role | null
}

/** The accounts of these users, a row per membership (organization_id null for a user without any), in one query. */
export const accountsOf = (db: Knex, userIds: number[]): Promise<AccountRow[]> =>
  db('users as u')
    .leftJoin('organizations_users as m', 'm.user_id', 'u.id')
    .whereIn('u.id', userIds)
    .select('u.id as user_id', 'u.sessions_valid_after', 'm.organization_id', 'm.role')

/** A token issued before the account's last password or e-mail change no longer authenticates. */
export const sessionEnded = (account: Pick<AccountRow, 'sessions_valid_after'>, payload: { iat?: number; iat_ms?: unknown }) =>
  account.sessions_valid_after !== null && tokenIssuedAtMs(payload) < account.sessions_valid_after.getTime()

/**
 * Bearer JWT: the caller is the user, acting in any organization they belong to. One query reads
 * the memberships and the account's sessions_valid_after: a token issued before the account's
 * last password or e-mail change is refused.
 */
class MembershipJwtStrategy extends JWTStrategy {
  async authenticate(authentication: AuthenticationRequest, params: Params) {
    // One of our API keys sent as a bearer token (as /mcp takes it): the JWT parser would only say "jwt malformed".
    if (typeof authentication.accessToken === 'string' && authentication.accessToken.startsWith(API_KEY_PREFIX)) {
      throw new NotAuthenticated('Invalid API key: API keys go in the x-api-key header (x-api-key: crm_…), not in Authorization: Bearer')
    }
    const result: any = await super.authenticate(authentication, params)
    const rows = await accountsOf((this.app as Application).get('knex'), [result.user.id])
    if (!rows.length || sessionEnded(rows[0], result.authentication.payload)) {
      throw new NotAuthenticated('Your session has ended; please sign in again')
    }
    const caller: Caller = {
      userId: result.user.id,
      roles: new Map(rows.filter((m) => m.organization_id !== null).map((m) => [m.organization_id!, m.role!]))
    }
    return { ...result, caller }
  }
}

/**
 * E-mail addresses are stored lower-cased, so the login looks them up lower-cased too. The
 * account is read as stored (its password hash is never in what the users service sends).
 */
class CaseInsensitiveLocalStrategy extends LocalStrategy {
  async findEntity(username: string) {
    const email = typeof username === 'string' ? username.trim().toLowerCase() : ''
    const user = email ? await (this.app as Application).get('knex')('users').where({ email }).first() : undefined
    if (!user) throw new NotAuthenticated(this.configuration.errorMessage)
    return user
  }
}

/**
 * A login is decided by its body alone (the strategy and its credentials): an x-api-key or
 * Authorization header sent along is ignored, so it neither answers for the login nor changes
 * how the account it verified is read back. It takes no query parameters (400).
 */
const loginByBodyOnly = async (context: { params: Params }) => {
  delete context.params.authentication
}

export const authentication = (app: Application) => {
  const auth = new AccountAuthenticationService(app)
  auth.register('jwt', new MembershipJwtStrategy())
  auth.register('local', new CaseInsensitiveLocalStrategy())
  const apiKeys = new ApiKeyStrategy()
  auth.register('api-key', apiKeys)
  app.use('authentication', auth)
  // The body is validated first: a malformed login is a 400 that spends no login budget.
  app.service('authentication').hooks({ around: { create: [validateLogin, throttleFailedLogins] }, before: { create: [noFilters, loginByBodyOnly] } })
  app.hooks({
    teardown: [
      async (_context: unknown, next: () => Promise<void>) => {
        await apiKeys.invalidation?.stop()
        await next()
      }
    ]
  })
}

export const loadSecret = (app: Application) => {
  const config = app.get('authentication')!
  if (config.secret) return
  checkAuthSecret(config.secret)
  config.secret = persistentDevelopmentSecret(app.get('dataDir'))
}

/** Development installs get a random secret, kept under DATA_DIR so tokens survive restarts. */
function persistentDevelopmentSecret(dataDir: string) {
  const file = path.resolve(dataDir, 'auth-secret')
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch {
    const secret = crypto.randomBytes(48).toString('base64url')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, secret, { mode: 0o600 })
    return secret
  }
}
