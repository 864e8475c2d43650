import type { AccountChannel } from '../../channel-accounts/channel-accounts.schema.js'

/** A channel account as the integrations use it: its stored row with the credentials decrypted. */
export interface ChannelAccountRecord {
  id: number
  organization_id: number
  channel: AccountChannel
  name: string
  is_active: boolean
  config: Record<string, any>
  webhook_key: string
  verify_token: string
  widget_token: string | null
  credentials: Record<string, string> | null
  deleted_at: Date | null
}

/** A webhook request as received: the raw bytes (signatures are computed over them) and the URL the provider called. */
export interface InboundRequest {
  rawBody: Buffer
  headers: Record<string, string | string[] | undefined>
  /** The account's public URL the provider signed (webhook_url, or webhook_url + '/status'). */
  url: string
  /** 'status' on Twilio's status callback URL. */
  variant: 'message' | 'status'
}

/** Who wrote: every identity the provider gave, so that any of them can match a contact. */
export interface Sender {
  whatsappWaId?: string
  whatsappUserId?: string
  messengerUserId?: string
  instagramUserId?: string
  /** E.164, e.g. +14155550100. */
  phone?: string
  name?: string
}

export type ContentType = 'text' | 'image' | 'audio' | 'video' | 'file' | 'location'
export type ProviderStatus = 'sent' | 'delivered' | 'read' | 'failed'

export type InboundEvent =
  | { type: 'message'; providerMessageId: string; sender: Sender; content: string; contentType: ContentType; metadata: Record<string, unknown> }
  | { type: 'status'; providerMessageId: string; status: ProviderStatus; error?: ProviderError; occurredAt: Date }
  /** Messenger: every outbound message to this person up to the watermark moved to this status. */
  | { type: 'watermark'; sender: Sender; status: 'delivered' | 'read'; watermark: Date }
  /** An event of the request not taken (a sender id not of the provider's form): logged, nothing stored. */
  | { type: 'skipped'; reason: string }

export interface ProviderError {
  code: string
  message: string
}

/** A queued message and what sending it needs. */
export interface OutgoingMessage {
  message: {
    id: number
    content: string
    content_type: string
    template: { name: string; language: string; components: Record<string, unknown>[] } | null
  }
  /** The contact's row: SMS and WhatsApp send to its phone_e164. */
  contact: Record<string, any>
  /** Attached conversation files, sent as media by URL. */
  files: { url: string; file_type: string; file_name: string }[]
  /** Where the provider reports this message's statuses, when it takes a per-message URL (Twilio). */
  statusCallbackUrl: string | null
}

export type SendOutcome =
  | { ok: true; providerMessageId: string }
  /** retryable: a timeout, a network error, a 5xx or a 429 (with the provider's Retry-After); otherwise final. */
  | { ok: false; retryable: boolean; retryAfterMs?: number; error: ProviderError }

/** What the provider said of an account's ids and credentials when it was connected: accepted, or refused on a field. */
export type AccountCheck =
  | { ok: true }
  /**
   * retryable: the provider could not be asked (a timeout, a network error, a 5xx or a 429);
   * unreachable: no answer came at all (a timeout, a network error).
   */
  | { ok: false; retryable: boolean; unreachable?: boolean; field: 'credentials' | `config.${string}`; message: string }

export interface ProviderUrls {
  metaGraphUrl: string
  twilioApiUrl: string
}

/** One adapter per provider: the rest of the code never speaks a provider's wire format. */
export interface ChannelAdapter {
  /** Authenticity of a webhook request, from its signature over the raw bytes; nothing is parsed before. */
  verify(request: InboundRequest, account: ChannelAccountRecord): boolean
  /** The messages and statuses of a verified request. */
  parse(request: InboundRequest, account: ChannelAccountRecord): InboundEvent[]
  send(outgoing: OutgoingMessage, account: ChannelAccountRecord, urls: ProviderUrls): Promise<SendOutcome>
  /** Whether the provider accepts these credentials for the account's own id (asked before an account is stored). */
  checkAccount(config: Record<string, any>, credentials: Record<string, string>, urls: ProviderUrls): Promise<AccountCheck>
  /** The display name of a new sender whose webhook carries none (Messenger, Instagram); undefined when unknown. */
  profileName?(sender: Sender, account: ChannelAccountRecord, urls: ProviderUrls): Promise<string | undefined>
}
