import { BadRequest, Forbidden, NotAuthenticated, NotFound } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { hashToken, newToken } from '../../../authentication.js'
import type { Application } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { inTransaction } from '../../../hooks/deferred-events.js'
import { isLive, loadAccount } from '../channels/accounts.js'
import { contactOfSender } from '../channels/contacts.js'
import { contactEvents, conversationFor } from '../channels/inbound.js'
import type { ChannelAccountRecord } from '../channels/providers/types.js'
import { provesUser } from '../channels/webchat-identity.js'
import type { ConversationMessageService } from '../conversation-messages/conversation-messages.class.js'
import { DEFAULT_COLOR } from './public-webchat.schema.js'
import type { WebchatConfig, WebchatMessage, WebchatMessageData, WebchatMessageQuery, WebchatSessionData } from './public-webchat.schema.js'
import { organizationOfToken, rememberToken } from '../../../lib/public-tokens.js'

export type { WebchatConfig, WebchatMessage, WebchatMessageData, WebchatMessageQuery, WebchatSessionData }

type PublicParams<Q = any> = Params<Q> & { route?: Record<string, string>; headers?: Record<string, string | string[] | undefined> }

const headerOf = (params: PublicParams, name: string) => {
  const value = params.headers?.[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * How fresh a session's last_seen_at is kept: to the minute, or to a tenth of the idle limit when
 * that is shorter, so that a visitor reading every few seconds costs no write per read.
 */
const lastSeenResolutionS = (idleS: number) => Math.min(60, idleS / 10)

/**
 * Web-chat sessions with what decides whether they still let their visitor in: their
 * conversation while it is still their contact's (a thread the team has merged into another
 * contact is that contact's now, no longer the visitor's), their widget, whether the session
 * ended, and whether it has gone unused for longer than WEBCHAT_SESSION_IDLE_S (idle, by the
 * database's clock, which also writes last_seen_at).
 */
const sessionsWithState = (app: Application, db: Knex = app.get('knex')) => {
  const idleS = app.get('webchatSessionIdleS')
  return db('webchat_sessions as s')
    .join('conversations as c', function () {
      this.on('c.organization_id', 's.organization_id').andOn('c.id', 's.conversation_id').andOn('c.contact_id', 's.contact_id')
    })
    .join('channel_accounts as a', function () {
      this.on('a.organization_id', 's.organization_id').andOn('a.id', 's.channel_account_id')
    })
    .select(
      's.id', 's.organization_id', 's.channel_account_id', 's.contact_id', 's.conversation_id', 's.ended_at', 'c.is_blocked', 'c.deleted_at',
      'a.is_active as widget_active', 'a.deleted_at as widget_deleted_at',
      db.raw('s.last_seen_at <= now() - make_interval(secs => ?) as idle', [idleS]),
      db.raw('s.last_seen_at <= now() - make_interval(secs => ?) as seen_a_while_ago', [lastSeenResolutionS(idleS)])
    )
}

/** A blocked or deleted conversation: its visitor reads, writes and listens no more. */
export const chatClosed = (conversation: { is_blocked: boolean; deleted_at: Date | string | null }) => conversation.is_blocked || conversation.deleted_at !== null

type VisitorSession = NonNullable<Awaited<ReturnType<typeof visitorSession>>>

/**
 * Why a session no longer lets its visitor in, or undefined while it does. An ended or expired
 * session is gone (401: the widget forgets its token and opens a new session with the next
 * message); a closed chat or a widget deactivated or deleted by the team is a 403. A widget
 * activated again lets its sessions in again.
 */
export function sessionRefusal(session: VisitorSession) {
  if (session.ended_at !== null) return new NotAuthenticated('This chat session has ended')
  if (session.idle) return new NotAuthenticated('This chat session has expired')
  if (chatClosed(session) || !session.widget_active || session.widget_deleted_at !== null) return new Forbidden('This chat is closed')
  return undefined
}

/** A visitor's session, from its token: the conversation it opened, and nothing else. */
export async function visitorSession(app: Application, token: string | undefined) {
  if (!token) return undefined
  const tokenHash = hashToken(token)
  const organizationId = await organizationOfToken(app.get('knex'), tokenHash)
  if (organizationId === undefined) return undefined
  return sessionsWithState(app).where({ 's.organization_id': organizationId, 's.token_hash': tokenHash }).first()
}

/** The visitor of an open session was seen now: the session's idle time starts again. */
export async function seenNow(app: Application, session: VisitorSession) {
  if (!session.seen_a_while_ago) return
  await app.get('knex')('webchat_sessions').where({ organization_id: session.organization_id, id: session.id }).update({ last_seen_at: app.get('knex').fn.now() })
}

/** Of these sessions, the ids of those still open (one query on db, whatever their number). */
export async function openSessionIds(app: Application, db: Knex, sessions: { organization_id: number; id: number }[]) {
  const rows = await sessionsWithState(app, db).whereIn(['s.organization_id', 's.id'], sessions.map((session) => [session.organization_id, session.id]))
  return new Set(rows.filter((row) => !sessionRefusal(row)).map((row) => row.id as number))
}

/** The messages a visitor sees, with their files' names, types and URLs (one query for the files of a page). */
export async function visitorView(db: Knex, rows: Record<string, any>[]): Promise<WebchatMessage[]> {
  const fileIds = [...new Set(rows.flatMap((row) => row.file_ids ?? []))]
  const files: Record<string, any>[] = fileIds.length && rows.length
    ? await db('conversation_files').select('id', 'file_name', 'file_type', 'url').where({ organization_id: rows[0].organization_id }).whereIn('id', fileIds)
    : []
  const byId = new Map(files.map((file) => [file.id, { file_name: file.file_name, file_type: file.file_type, url: file.url }]))
  return rows.map((row) => ({
    id: row.id,
    conversation_id: row.conversation_id,
    direction: row.direction,
    sender_type: row.sender_type,
    content: row.content,
    content_type: row.content_type,
    files: (row.file_ids ?? []).map((id: number) => byId.get(id)).filter(Boolean),
    created_at: new Date(row.created_at).toISOString()
  }))
}

/**
 * POST /public/webchat/:widgetToken/sessions — a visitor opens the chat on this widget. What the
 * widget says of the visitor (name, e-mail) is a claim: an anonymous session gets a contact and
 * a conversation of its own, the claim recorded on the contact for the team to merge. Only a
 * user id signed with the widget's identity secret (user_hash) joins the contact known by that
 * id (its external_id) and their thread. allowed_origins keeps other sites' pages from opening
 * the chat in a browser; it authenticates nobody (any client can send any Origin). The browser's
 * previous session, named by its token, ends (endEarlierSession).
 */
export class WebchatSessionService {
  constructor(private app: Application) {}

  async create(data: WebchatSessionData, params: PublicParams) {
    const account = await liveWidget(this.app, params)
    if (!pageMayChat(this.app, account, params, { originRequired: true })) throw new Forbidden('This site may not open the chat')
    const userId = verifiedUserId(account, data)
    const token = newToken()
    const conversationId = await inTransaction(this.app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
      const contact = await contactOfSender(trx, account.organization_id, { name: data.name, email: data.email, webchatUserId: userId }, 'Visitor', contactEvents(this.app, pendingEvents))
      const conversation = await conversationFor(this.app, trx, account, contact.id, pendingEvents)
      if (!conversation) throw new Forbidden('This chat is closed')
      const tokenHash = hashToken(token)
      await trx('webchat_sessions').insert({
        organization_id: account.organization_id, channel_account_id: account.id, contact_id: contact.id, conversation_id: conversation.id, token_hash: tokenHash
      })
      await rememberToken(trx, tokenHash, account.organization_id)
      await endEarlierSession(trx, account, headerOf(params, 'x-visitor-token'))
      return conversation.id as number
    })
    return { visitor_token: token, conversation_id: conversationId, title: account.config.title ?? null, welcome_message: account.config.welcome_message ?? null }
  }
}

/**
 * A browser opening a new session presents the token of the one it had (X-Visitor-Token), which
 * ends it: a browser holds one live session of a widget. A token of another widget, or one no
 * session has, ends nothing (the browser may hold a token of a session long gone).
 */
async function endEarlierSession(trx: Knex.Transaction, account: ChannelAccountRecord, token: string | undefined) {
  if (!token) return
  await trx('webchat_sessions')
    .where({ organization_id: account.organization_id, channel_account_id: account.id, token_hash: hashToken(token) })
    .whereNull('ended_at')
    .update({ ended_at: trx.fn.now() })
}

/** The live web-chat account of the route's widget token, or a 404. */
async function liveWidget(app: Application, params: PublicParams) {
  const account = await loadAccount(app, { widget_token: params.route?.widgetToken ?? '', channel: 'webchat' })
  if (!isLive(account)) throw new NotFound('No web chat here')
  return account
}

/** Where a widget's demo page is: PUBLIC_URL + /public/webchat/<widget_token>/demo. */
export const demoPageUrl = (publicUrl: string, widgetToken: string) => `${publicUrl.replace(/\/$/, '')}/public/webchat/${widgetToken}/demo`

/**
 * Whether the page behind a request may use the widget: any page when allowed_origins is empty,
 * else a page of one of those origins. The service's own origin (PUBLIC_URL) is allowed too, but
 * only for this widget's demo page: the request must come from that origin AND name the demo page
 * as its Referer (the demo page sends it: Referrer-Policy same-origin). A browser sets both
 * headers itself, so no other site's page can pass for the demo; other pages of the service's
 * origin (the API docs' try-it-out) are refused like any other site. Like allowed_origins, this
 * keeps pages in browsers out; it authenticates nobody.
 * The config read (a GET) carries no Origin when the page is on the service's own origin, and
 * says nothing secret: it is refused only for an Origin that may not chat (originRequired false).
 */
export function pageMayChat(app: Application, account: ChannelAccountRecord, params: PublicParams, { originRequired }: { originRequired: boolean }) {
  const origins: string[] = account.config.allowed_origins ?? []
  const origin = headerOf(params, 'origin')
  if (origins.length === 0) return true
  if (!origin) return !originRequired
  if (origins.includes(origin)) return true
  const demo = demoPageUrl(app.get('publicUrl'), account.widget_token!)
  return origin === new URL(demo).origin && refererPage(headerOf(params, 'referer')) === demo
}

/** A Referer without its query and fragment, or undefined when it is not a URL. */
function refererPage(referer: string | undefined) {
  if (!referer || !URL.canParse(referer)) return undefined
  const url = new URL(referer)
  return `${url.origin}${url.pathname}`
}

/**
 * GET /public/webchat/:widgetToken/config — what the widget shows before any session: its title,
 * welcome message, colour and corner. Refused (403) to a page that may not open the chat, so
 * that the widget does not show there at all.
 */
export class WebchatConfigService {
  constructor(private app: Application) {}

  async find(params: PublicParams): Promise<WebchatConfig> {
    const account = await liveWidget(this.app, params)
    if (!pageMayChat(this.app, account, params, { originRequired: false })) throw new Forbidden('This site may not open the chat')
    const config = account.config
    return {
      title: config.title ?? null,
      welcome_message: config.welcome_message ?? null,
      color: config.color ?? DEFAULT_COLOR,
      position: config.position ?? 'bottom-right'
    }
  }
}

/** The user id a session proves with the widget's signature, or undefined for an anonymous one. */
function verifiedUserId(account: ChannelAccountRecord, data: WebchatSessionData): string | undefined {
  if (data.user_id === undefined && data.user_hash === undefined) return undefined
  if (data.user_hash === undefined) throw fieldError('user_hash', 'is required with user_id')
  if (data.user_id === undefined) throw fieldError('user_id', 'is required with user_hash')
  const secret = account.credentials?.identity_secret
  if (!secret) throw fieldError('user_id', 'cannot be verified: this widget has no identity secret yet (PATCH rotate_identity_secret)')
  if (!provesUser(secret, data.user_id, data.user_hash)) throw new NotAuthenticated('Invalid user_hash')
  return data.user_id
}

/** GET and POST /public/webchat/messages with X-Visitor-Token: the visitor's own conversation only. */
export class WebchatMessageService {
  constructor(private app: Application) {}

  private async session(params: PublicParams) {
    const session = await visitorSession(this.app, headerOf(params, 'x-visitor-token'))
    if (!session) throw new NotAuthenticated('Missing or unknown X-Visitor-Token')
    const refusal = sessionRefusal(session)
    if (refusal) throw refusal
    await seenNow(this.app, session)
    return session
  }

  /** The visitor's thread, oldest first, without notes; created_at $gt or id $gt for what is new. */
  async find(params: PublicParams<WebchatMessageQuery>) {
    const session = await this.session(params)
    const db = this.app.get('knex')
    const query = params.query ?? {}
    const rows = await db('conversation_messages')
      .where({ organization_id: session.organization_id, conversation_id: session.conversation_id })
      .whereIn('direction', ['inbound', 'outbound'])
      .whereNull('deleted_at')
      .modify((q) => {
        if (query.created_at?.$gt) q.where('created_at', '>', query.created_at.$gt)
        if (query.id?.$gt) q.where('id', '>', query.id.$gt)
      })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(query.$limit ?? 50)
    return { data: await visitorView(db, rows) }
  }

  /** The visitor writes: an inbound message of their conversation (reopened when it was resolved). */
  async create(data: WebchatMessageData, params: PublicParams) {
    const session = await this.session(params)
    const service = this.app.service('conversation-messages-webchat') as unknown as ConversationMessageService
    const row = await inTransaction(this.app.get('knex'), async ({ transaction: { trx }, pendingEvents }) =>
      service.receive(trx, { organization_id: session.organization_id, id: session.conversation_id, channel_account_id: session.channel_account_id },
        { content: data.content, content_type: 'text', metadata: {}, provider_message_id: null }, pendingEvents))
    if (!row) throw new BadRequest('The message was not stored')
    const [view] = await visitorView(this.app.get('knex'), [row])
    return view
  }
}
