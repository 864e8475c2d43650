import type { ChatMessage } from './thread'

export interface WidgetConfig {
  title: string | null
  welcome_message: string | null
  color: string
  position: 'bottom-right' | 'bottom-left'
}

/** An answer that is not a 2xx (status 0: the network failed). */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

const PAGE = 50

/** The public web-chat API, from the site's page (CORS; no cookies). */
export class Api {
  constructor(private readonly base: string, private readonly widgetToken: string) {}

  private async call<T>(path: string, init: RequestInit & { visitorToken?: string } = {}): Promise<T> {
    const headers: Record<string, string> = { Accept: 'application/json' }
    if (init.body) headers['Content-Type'] = 'application/json'
    if (init.visitorToken) headers['X-Visitor-Token'] = init.visitorToken
    let response: Response
    try {
      response = await fetch(`${this.base}${path}`, { ...init, headers, credentials: 'omit', cache: 'no-store' })
    } catch {
      throw new ApiError(0, 'network')
    }
    const body = await response.json().catch(() => ({}))
    if (!response.ok) throw new ApiError(response.status, body.message ?? response.statusText)
    return body as T
  }

  config() {
    return this.call<WidgetConfig>(`/public/webchat/${encodeURIComponent(this.widgetToken)}/config`)
  }

  /** A new session; the token of the browser's previous one, if it had one, ends that one for good. */
  openSession(visitor: { name?: string; email?: string }, previousToken: string | null) {
    return this.call<{ visitor_token: string }>(`/public/webchat/${encodeURIComponent(this.widgetToken)}/sessions`, {
      method: 'POST', body: JSON.stringify(visitor), visitorToken: previousToken ?? undefined
    })
  }

  send(visitorToken: string, content: string) {
    return this.call<ChatMessage>('/public/webchat/messages', { method: 'POST', body: JSON.stringify({ content }), visitorToken })
  }

  /** Every message after afterId (0: the whole thread), page by page. */
  async messagesAfter(visitorToken: string, afterId: number) {
    const all: ChatMessage[] = []
    for (let cursor = afterId; ; ) {
      const query = cursor > 0 ? `?id[$gt]=${cursor}&$limit=${PAGE}` : `?$limit=${PAGE}`
      const { data } = await this.call<{ data: ChatMessage[] }>(`/public/webchat/messages${query}`, { visitorToken })
      all.push(...data)
      if (data.length < PAGE) return all
      cursor = Math.max(cursor, ...data.map((message) => message.id))
    }
  }
}
