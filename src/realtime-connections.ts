import type { Application, Caller, Role } from './declarations.js'
import { accountsOf, keyExpired, liveApiKeys, sessionEnded } from './authentication.js'
import { accessibleOrganizations } from './hooks/tenant-scope.js'
import { openSessionIds } from './services/inbox/public-webchat/public-webchat.class.js'

export const organizationChannel = (organizationId: number) => `organizations/${organizationId}`
/** A web-chat visitor's connections: the messages of their own conversation, notes excepted. */
export const visitorChannel = (organizationId: number, conversationId: number) => `webchat-visitors/${organizationId}/${conversationId}`

/** What a JWT's payload tells of its life: when it was issued, and when it expires (seconds). */
export interface JwtPayload {
  iat?: number
  iat_ms?: unknown
  exp?: number
}

/** What a socket proved (in its handshake or its login), kept to check it again while the socket stays open. */
export type SocketCredential =
  | { kind: 'api-key'; organization_id: number; id: number }
  | { kind: 'jwt'; userId: number; payload: JwtPayload }
  | { kind: 'visitor'; organization_id: number; id: number }

/** A Feathers connection (socket.feathers) as realtime.ts fills it in the handshake or at login. */
export interface Connection {
  /** The credentials presented again with every call of the socket (Feathers' authenticate hook reads them). */
  authentication?: { strategy: string; accessToken?: string; apiKey?: string }
  /** The client's address, for the login throttle. */
  clientAddress?: string
  /**
   * Every credential the connection was admitted with. One identity per connection is the rule
   * (realtime.ts refuses a second), and the sweep ends the connection when any of them fails, so
   * that no way of being admitted escapes being checked.
   */
  credentials?: SocketCredential[]
  /** Staff (API key or JWT): who is calling, and the organizations whose channels it joined. */
  caller?: Caller
  /** A web-chat visitor: the one conversation whose channel it joined. */
  visitor?: { organization_id: number; conversation_id: number }
}

/** One credential of an open connection, as the sweep checks it. */
interface Held<K extends SocketCredential['kind']> {
  connection: Connection
  credential: Extract<SocketCredential, { kind: K }>
}

const jwtExpired = (payload: JwtPayload) => payload.exp !== undefined && payload.exp * 1000 <= Date.now()

/**
 * How often each instance checks its sockets' credentials again. A revoked key, a removed
 * member, a password or e-mail change, an expiry or a closed web chat reaches its sockets within
 * this delay (and the query's time), on every instance, since each one checks its own.
 */
export const SWEEP_INTERVAL_MS = 2_000

const distinct = <T>(values: T[], key: (value: T) => string) => [...new Map(values.map((value) => [key(value), value])).values()]

/**
 * Sockets authenticate once, in their handshake; credentials can end while they stay open. Every
 * SWEEP_INTERVAL_MS this instance reads again, in one query per kind of credential, the distinct
 * API keys, accounts and web-chat sessions of its open sockets, and ends what no longer holds:
 * a connection any of whose credentials is gone (key, account session or chat) is
 * disconnected; a member removed from one organization leaves that organization's channel only;
 * roles (and a person's new memberships) are taken over, so events follow what the connection
 * may read now. Checking on
 * each event instead would cost a query per connection per event, and announcing each change to
 * every instance would need a message for every way a credential ends (expiry has no event at
 * all): one batched read per instance every two seconds costs less than either and needs no
 * messaging between instances.
 */
export class SocketCredentials {
  private readonly open = new Set<Connection>()

  constructor(private readonly app: Application) {}

  track(connection: Connection) {
    if (connection.credentials?.length) this.open.add(connection)
  }

  forget(connection: Connection) {
    this.open.delete(connection)
  }

  /**
   * Feathers' logout (authentication remove over the socket) leaves every channel
   * (transport-commons); the connection is no longer checked, so no sweep joins it again.
   */
  loggedOut(connection: Connection) {
    this.forget(connection)
    delete connection.caller
    delete connection.credentials
  }

  /** Feathers' own way to end a connection: it leaves every channel and its socket is closed. */
  private end(connection: Connection) {
    this.app.emit('disconnect', connection)
  }

  /**
   * Reads the credentials again (through the background knex: upkeep, not a request's work) and
   * ends the connections whose credentials failed. Run by runInBackground (src/realtime.ts),
   * which logs a failed pass and tries again on the next one.
   */
  async sweep() {
    if (this.open.size === 0) return
    const held = [...this.open].flatMap((connection) => (connection.credentials ?? []).map((credential) => ({ connection, credential })))
    const of = <K extends SocketCredential['kind']>(kind: K) => held.filter((one) => one.credential.kind === kind) as Held<K>[]
    const failed = [...await this.checkKeys(of('api-key')), ...await this.checkAccounts(of('jwt')), ...await this.checkVisitors(of('visitor'))]
    for (const connection of new Set(failed)) this.end(connection)
  }

  /** The connections holding a key that no longer authenticates; the others take their user's current role. */
  private async checkKeys(held: Held<'api-key'>[]): Promise<Connection[]> {
    if (held.length === 0) return []
    const keys = distinct(held.map(({ credential }) => credential), (key) => `${key.organization_id}/${key.id}`)
    const rows = await liveApiKeys(this.app.get('backgroundKnex'))
      .whereIn(['k.organization_id', 'k.id'], keys.map((key) => [key.organization_id, key.id]))
      .select('k.id', 'k.expires_at', 'm.role')
    const live = new Map(rows.filter((row) => !keyExpired(row)).map((row) => [row.id as number, row.role as Role]))
    const failed: Connection[] = []
    for (const { connection, credential } of held) {
      const role = live.get(credential.id)
      if (role === undefined) failed.push(connection)
      // The key acts as its user: a changed role of the user changes what its events are.
      else connection.caller?.roles.set(credential.organization_id, role)
    }
    return failed
  }

  /** The connections holding a JWT whose session ended; the others follow their user's memberships. */
  private async checkAccounts(held: Held<'jwt'>[]): Promise<Connection[]> {
    if (held.length === 0) return []
    const rows = await accountsOf(this.app.get('backgroundKnex'), [...new Set(held.map(({ credential }) => credential.userId))])
    const memberships = new Map<number, Map<number, Role>>()
    for (const row of rows) {
      const organizations = memberships.get(row.user_id) ?? memberships.set(row.user_id, new Map()).get(row.user_id)!
      if (row.organization_id !== null) organizations.set(row.organization_id, row.role!)
    }
    const accounts = new Map(rows.map((row) => [row.user_id, row]))
    const failed: Connection[] = []
    for (const { connection, credential: { userId, payload } } of held) {
      const account = accounts.get(userId)
      if (!account || sessionEnded(account, payload) || jwtExpired(payload)) failed.push(connection)
      else this.followMemberships(connection, memberships.get(userId)!)
    }
    return failed
  }

  /**
   * A person's socket follows their memberships as they are now, as their next REST call would:
   * it leaves the channel of an organization they were removed from (and only that one), joins
   * the channel of one they joined since, and each role is the current one (events follow it).
   */
  private followMemberships(connection: Connection, current: Map<number, Role>) {
    const caller = connection.caller!
    for (const organizationId of accessibleOrganizations(caller)) {
      if (current.has(organizationId)) continue
      this.app.channel(organizationChannel(organizationId)).leave(connection)
      caller.roles.delete(organizationId)
    }
    for (const [organizationId, role] of current) {
      if (!caller.roles.has(organizationId)) this.app.channel(organizationChannel(organizationId)).join(connection)
      caller.roles.set(organizationId, role)
    }
  }

  /** The connections holding a web-chat session that is no longer open. */
  private async checkVisitors(held: Held<'visitor'>[]): Promise<Connection[]> {
    if (held.length === 0) return []
    const open = await openSessionIds(this.app, this.app.get('backgroundKnex'), distinct(held.map(({ credential }) => credential), (session) => `${session.organization_id}/${session.id}`))
    return held.filter(({ credential }) => !open.has(credential.id)).map(({ connection }) => connection)
  }
}
