import { BadRequest, Forbidden, NotAuthenticated, NotFound } from '@feathersjs/errors'
import type { Params } from '@feathersjs/feathers'
import type { Knex } from 'knex'
import { hashToken, newToken } from '../../authentication.js'
import type { Application } from '../../declarations.js'
import { inTransaction } from '../../hooks/deferred-events.js'
import { isLive, loadAccount } from '../../channels/accounts.js'
import { contactOfSender } from '../../channels/contacts.js'
import { conversationFor } from '../../channels/inbound.js'
import type { ConversationMessageService } from '../conversation-messages/conversation-messages.class.js'
import type { WebchatMessage, WebchatMessageData, WebchatMessageQuery, WebchatSessionData } from './public-webchat.schema.js'

export type { WebchatMessage, WebchatMessageData, WebchatMessageQuery, WebchatSessionData }

type PublicParams<Q = any> = Params<Q> & { route?: Record<string, string>; headers?: Record<string, string | string[] | undefined> }

const headerOf = (params: PublicParams, name: string) => {
  const value = params.headers?.[name]
  return Array.isArray(value) ? value[0] : value
}

/** A visitor's session, from its token: the conversation it opened, and nothing else. */
export async function visitorSession(db: Knex, token: string | undefined) {
  if (!token) return undefined
  return db('webchat_sessions as s')
    .join('conversations as c', function () {
      this.on('c.organization_id', 's.organization_id').andOn('c.id', 's.conversation_id')
    })
    .select('s.organization_id', 's.channel_account_id', 's.contact_id', 's.conversation_id', 'c.is_blocked', 'c.deleted_at')
    .where('s.token_hash', hashToken(token))
    .first()
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
 * POST /public/webchat/:widgetToken/sessions — a visitor opens the chat: a contact (matched by
 * e-mail, or created) and their web-chat conversation on this widget. The page's Origin must be
 * one of the widget's allowed_origins when it lists any.
 */
export class WebchatSessionService {
  constructor(private app: Application) {}

  async create(data: WebchatSessionData, params: PublicParams) {
    const account = await loadAccount(this.app, { widget_token: params.route?.widgetToken ?? '', channel: 'webchat' })
    if (!isLive(account)) throw new NotFound('No web chat here')
    const origins: string[] = account.config.allowed_origins ?? []
    const origin = headerOf(params, 'origin')
    if (origins.length > 0 && (!origin || !origins.includes(origin))) throw new Forbidden('This site may not open the chat')
    const token = newToken()
    const conversationId = await inTransaction(this.app.get('knex'), async ({ transaction: { trx }, pendingEvents }) => {
      const contact = await contactOfSender(trx, account.organization_id, { name: data.name, email: data.email }, 'Visitor')
      const conversation = await conversationFor(this.app, trx, account, contact.id, pendingEvents)
      if (!conversation) throw new Forbidden('This chat is closed')
      await trx('webchat_sessions').insert({
        organization_id: account.organization_id, channel_account_id: account.id, contact_id: contact.id, conversation_id: conversation.id, token_hash: hashToken(token)
      })
      return conversation.id as number
    })
    return { visitor_token: token, conversation_id: conversationId, title: account.config.title ?? null, welcome_message: account.config.welcome_message ?? null }
  }
}

/** GET and POST /public/webchat/messages with X-Visitor-Token: the visitor's own conversation only. */
export class WebchatMessageService {
  constructor(private app: Application) {}

  private async session(params: PublicParams) {
    const session = await visitorSession(this.app.get('knex'), headerOf(params, 'x-visitor-token'))
    if (!session) throw new NotAuthenticated('Missing or unknown X-Visitor-Token')
    return session
  }

  /** The visitor's thread, oldest first, without notes; created_at $gt for what is new. */
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
      })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .limit(query.$limit ?? 50)
    return { data: await visitorView(db, rows) }
  }

  /** The visitor writes: an inbound message of their conversation (reopened when it was resolved). */
  async create(data: WebchatMessageData, params: PublicParams) {
    const session = await this.session(params)
    if (session.is_blocked || session.deleted_at) throw new Forbidden('This chat is closed')
    const service = this.app.service('conversation-messages-webchat') as unknown as ConversationMessageService
    const row = await inTransaction(this.app.get('knex'), async ({ transaction: { trx }, pendingEvents }) =>
      service.receive(trx, { organization_id: session.organization_id, id: session.conversation_id, channel_account_id: session.channel_account_id },
        { content: data.content, content_type: 'text', metadata: {}, provider_message_id: null }, pendingEvents))
    if (!row) throw new BadRequest('The message was not stored')
    const [view] = await visitorView(this.app.get('knex'), [row])
    return view
  }
}
