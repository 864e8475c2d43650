import { callProvider } from './http.js'
import { fromUnixSeconds, graphAccountCheck, graphError, graphHeaders, isMetaId, mediaKind, notMetaSender, verifyMetaSignature } from './meta.js'
import type { ChannelAdapter, ContentType, InboundEvent, ProviderStatus } from './types.js'

const STATUSES: Record<string, ProviderStatus> = { sent: 'sent', delivered: 'delivered', read: 'read', failed: 'failed' }
const MEDIA_TYPES: Record<string, ContentType> = { image: 'image', sticker: 'image', audio: 'audio', video: 'video', document: 'file' }

/** One message of value.messages[]: its text and what else it carries, as our content types. */
function messageContent(message: any): { content: string; contentType: ContentType; metadata: Record<string, unknown> } | undefined {
  const metadata: Record<string, unknown> = message.context?.id ? { context: { id: message.context.id } } : {}
  const type = String(message.type)
  if (type === 'text') return { content: String(message.text?.body ?? ''), contentType: 'text', metadata }
  if (MEDIA_TYPES[type]) {
    const media = message[type] ?? {}
    const stored = { type, id: media.id, mime_type: media.mime_type, sha256: media.sha256, filename: media.filename }
    return { content: String(media.caption ?? ''), contentType: MEDIA_TYPES[type], metadata: { ...metadata, media: JSON.parse(JSON.stringify(stored)) } }
  }
  if (type === 'location') {
    const { latitude, longitude, name, address } = message.location ?? {}
    return { content: [name, address].filter(Boolean).join(', ') || `${latitude},${longitude}`, contentType: 'location', metadata: { ...metadata, location: { latitude, longitude, name, address } } }
  }
  if (type === 'interactive') {
    const reply = message.interactive?.button_reply ?? message.interactive?.list_reply ?? {}
    return { content: String(reply.title ?? ''), contentType: 'text', metadata: { ...metadata, interactive: { type: message.interactive?.type, id: reply.id, title: reply.title, description: reply.description } } }
  }
  if (type === 'button') {
    return { content: String(message.button?.text ?? ''), contentType: 'text', metadata: { ...metadata, button: { text: message.button?.text, payload: message.button?.payload } } }
  }
  return undefined
}

/** The WhatsApp Cloud API: webhooks of the WhatsApp Business Account, POST /{phone_number_id}/messages. */
export const whatsapp: ChannelAdapter = {
  verify: verifyMetaSignature,

  parse(request, account) {
    const body = JSON.parse(request.rawBody.toString('utf8'))
    const events: InboundEvent[] = []
    for (const entry of body?.entry ?? []) {
      for (const change of entry?.changes ?? []) {
        const value = change?.value ?? {}
        // One Meta app may report several numbers to this URL: only this account's number is its business.
        if (change?.field !== 'messages' || String(value.metadata?.phone_number_id) !== String(account.config.phone_number_id)) continue
        const contacts: any[] = value.contacts ?? []
        for (const message of value.messages ?? []) {
          const content = messageContent(message)
          if (!content || !message.id) continue
          const profile = contacts.find((c) => (message.from && c.wa_id === message.from) || (message.from_user_id && c.user_id === message.from_user_id)) ?? contacts[0] ?? {}
          const waId = message.from || profile.wa_id ? String(message.from || profile.wa_id) : undefined
          if (waId !== undefined && !isMetaId(waId)) {
            events.push(notMetaSender(waId))
            continue
          }
          events.push({
            type: 'message',
            providerMessageId: String(message.id),
            sender: {
              whatsappWaId: waId,
              whatsappUserId: message.from_user_id || profile.user_id || undefined,
              phone: waId ? `+${waId}` : undefined,
              name: profile.profile?.name
            },
            ...content
          })
        }
        for (const status of value.statuses ?? []) {
          const mapped = STATUSES[status?.status]
          if (!mapped || !status.id) continue
          const error = status.errors?.[0]
          events.push({
            type: 'status',
            providerMessageId: String(status.id),
            status: mapped,
            occurredAt: fromUnixSeconds(status.timestamp),
            ...(error ? { error: { code: String(error.code), message: String(error.error_data?.details ?? error.message ?? error.title ?? 'failed') } } : {})
          })
        }
      }
    }
    return events
  },

  async send({ message, contact, files }, account, urls) {
    const recipient = contact.channel_whatsapp_wa_id
      ? { to: contact.channel_whatsapp_wa_id }
      : contact.phone_e164 ? { to: String(contact.phone_e164).replace(/^\+/, '') } : { recipient: contact.channel_whatsapp_user_id }
    const body: Record<string, unknown> = { messaging_product: 'whatsapp', recipient_type: 'individual', ...recipient }
    if (message.template) {
      const { name, language, components } = message.template
      Object.assign(body, { type: 'template', template: { name, language: { code: language }, components } })
    } else if (files.length > 0) {
      const [file] = files
      const kind = mediaKind(file.file_type)
      const type = kind === 'file' ? 'document' : kind
      const media: Record<string, unknown> = { link: file.url }
      if (message.content && type !== 'audio') media.caption = message.content
      if (type === 'document') media.filename = file.file_name
      Object.assign(body, { type, [type]: media })
    } else {
      Object.assign(body, { type: 'text', text: { preview_url: false, body: message.content } })
    }
    const answer = await callProvider(`${urls.metaGraphUrl}/${encodeURIComponent(String(account.config.phone_number_id))}/messages`, {
      method: 'POST', headers: graphHeaders(account.credentials?.access_token), body: JSON.stringify(body)
    }, graphError)
    if (!answer.ok) return answer
    const id = answer.body?.messages?.[0]?.id
    return id ? { ok: true, providerMessageId: String(id) } : { ok: false, retryable: false, error: { code: 'unexpected_answer', message: 'the Graph API answered without a message id' } }
  },

  /** GET /{phone_number_id}: readable only with a token of the WhatsApp Business Account that holds the number. */
  checkAccount(config, credentials, urls) {
    const id = String(config.phone_number_id)
    return graphAccountCheck(urls, `${encodeURIComponent(id)}?fields=id,display_phone_number`, credentials, 'access_token', (body) => String(body?.id) === id)
  }
}
