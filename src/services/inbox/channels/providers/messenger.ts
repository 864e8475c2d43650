import { callProvider } from './http.js'
import { graphAccountCheck, graphError, graphHeaders, isMetaId, mediaKind, notMetaSender, verifyMetaSignature } from './meta.js'
import type { ChannelAccountRecord, ChannelAdapter, ContentType, InboundEvent, Sender } from './types.js'

const ATTACHMENT_TYPES: Record<string, ContentType> = { image: 'image', video: 'video', audio: 'audio', file: 'file', location: 'location' }

/**
 * The Messenger Platform and Instagram Messaging share one wire format: webhooks with
 * entry[].messaging[] (message, delivery, read), and POST /{page or account id}/messages.
 */
function metaMessaging(kind: 'messenger' | 'instagram'): ChannelAdapter {
  const ownId = (account: ChannelAccountRecord) => String(kind === 'messenger' ? account.config.page_id : account.config.instagram_account_id)
  const senderOf = (id: string): Sender => (kind === 'messenger' ? { messengerUserId: id } : { instagramUserId: id })
  const recipientOf = (contact: Record<string, any>) => (kind === 'messenger' ? contact.channel_messenger_user_id : contact.channel_instagram_user_id)
  const tokenOf = (account: ChannelAccountRecord) => (kind === 'messenger' ? account.credentials?.page_access_token : account.credentials?.access_token)

  return {
    verify: verifyMetaSignature,

    parse(request, account) {
      const body = JSON.parse(request.rawBody.toString('utf8'))
      const events: InboundEvent[] = []
      for (const entry of body?.entry ?? []) {
        if (String(entry?.id) !== ownId(account)) continue
        for (const item of entry?.messaging ?? []) {
          const senderId = item?.sender?.id ? String(item.sender.id) : undefined
          if (!senderId) continue
          if (!isMetaId(senderId)) {
            events.push(notMetaSender(senderId))
            continue
          }
          const message = item.message
          if (message?.mid && !message.is_echo) {
            const attachment = message.attachments?.[0]
            const contentType: ContentType = attachment ? ATTACHMENT_TYPES[attachment.type] ?? 'file' : 'text'
            const metadata: Record<string, unknown> = {}
            if (attachment) metadata.attachments = message.attachments.map((a: any) => ({ type: a.type, url: a.payload?.url }))
            if (message.quick_reply?.payload) metadata.quick_reply = { payload: message.quick_reply.payload }
            if (message.reply_to?.mid) metadata.context = { id: message.reply_to.mid }
            events.push({ type: 'message', providerMessageId: String(message.mid), sender: senderOf(senderId), content: String(message.text ?? ''), contentType, metadata })
          }
          for (const mid of item.delivery?.mids ?? []) {
            events.push({ type: 'status', providerMessageId: String(mid), status: 'delivered', occurredAt: new Date(Number(item.delivery.watermark) || Date.now()) })
          }
          if (item.delivery?.watermark) events.push({ type: 'watermark', sender: senderOf(senderId), status: 'delivered', watermark: new Date(Number(item.delivery.watermark)) })
          if (item.read?.mid) events.push({ type: 'status', providerMessageId: String(item.read.mid), status: 'read', occurredAt: new Date(Number(item.timestamp) || Date.now()) })
          if (item.read?.watermark) events.push({ type: 'watermark', sender: senderOf(senderId), status: 'read', watermark: new Date(Number(item.read.watermark)) })
        }
      }
      return events
    },

    async send({ message, contact, files }, account, urls) {
      const recipient = recipientOf(contact)
      if (!recipient) return { ok: false, retryable: false, error: { code: 'no_recipient', message: `the contact has no ${kind} id: they must write first` } }
      const [file] = files
      const content = file
        ? { attachment: { type: mediaKind(file.file_type), payload: { url: file.url, is_reusable: true } } }
        : { text: message.content }
      const answer = await callProvider(`${urls.metaGraphUrl}/${encodeURIComponent(ownId(account))}/messages`, {
        method: 'POST',
        headers: graphHeaders(tokenOf(account)),
        body: JSON.stringify({ recipient: { id: recipient }, messaging_type: 'RESPONSE', message: content })
      }, graphError)
      if (!answer.ok) return answer
      const id = answer.body?.message_id
      return id ? { ok: true, providerMessageId: String(id) } : { ok: false, retryable: false, error: { code: 'unexpected_answer', message: 'the Graph API answered without a message_id' } }
    },

    /** The User Profile API: Messenger's first_name and last_name, Instagram's name (or username). */
    async profileName(sender, account, urls) {
      const id = kind === 'messenger' ? sender.messengerUserId : sender.instagramUserId
      const fields = kind === 'messenger' ? 'first_name,last_name' : 'name,username'
      const answer = await callProvider(`${urls.metaGraphUrl}/${encodeURIComponent(id ?? '')}?fields=${fields}`, { method: 'GET', headers: graphHeaders(tokenOf(account)) }, graphError)
      if (!answer.ok) return undefined
      const { first_name: first, last_name: last, name, username } = answer.body ?? {}
      return [first, last].filter(Boolean).join(' ') || name || username || undefined
    },

    /**
     * Messenger: GET /{page_id}/subscribed_apps, which Graph answers only to an access token of
     * that page (any token may read a public page itself). Instagram: GET /{instagram_account_id},
     * readable only with a token of the page the account is linked to.
     */
    checkAccount(config, credentials, urls) {
      const id = encodeURIComponent(String(kind === 'messenger' ? config.page_id : config.instagram_account_id))
      return kind === 'messenger'
        ? graphAccountCheck(urls, `${id}/subscribed_apps`, credentials, 'page_access_token', (body) => Array.isArray(body?.data))
        : graphAccountCheck(urls, `${id}?fields=id,username`, credentials, 'access_token', (body) => encodeURIComponent(String(body?.id)) === id)
    }
  }
}

export const messenger = metaMessaging('messenger')
export const instagram = metaMessaging('instagram')
