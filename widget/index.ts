// The web-chat widget: one <script src=".../public/webchat/widget.js" data-widget-token="..." async>
// on a site's page. Everything it shows lives in a shadow root (the site's CSS and ours do not meet),
// all text is set as text (textContent, text nodes: never parsed as HTML), and it needs nothing but
// the API's origin: no other script, no eval, no inline script or style attribute, so it runs under
// a strict Content-Security-Policy that allows that origin for script-src and connect-src.
import { Api, ApiError } from './api'
import type { WidgetConfig } from './api'
import { apiBase, safeUrl, socketOrigin, socketUrl, storageKey, textColorOn } from './helpers'
import { Live } from './live'
import { STYLES } from './styles'
import { Thread } from './thread'
import type { ChatMessage } from './thread'

const SAYS = 'CRM web chat:'
/** How often the thread is read when the page's policy refuses the socket. */
const POLL_MS = 3_000
const EVENT = 'conversation-messages-webchat'

type Child = Node | string | null | undefined | false

/** An element with attributes and children; strings become text nodes. */
function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value)
  for (const child of children) if (child) element.append(child)
  return element
}

/** The visitor token, in localStorage when the site's page may use it, else for this page only. */
class TokenStore {
  private memory: string | null = null
  constructor(private readonly key: string) {}

  get() {
    try {
      return localStorage.getItem(this.key)
    } catch {
      return this.memory
    }
  }

  set(token: string | null) {
    this.memory = token
    try {
      if (token) localStorage.setItem(this.key, token)
      else localStorage.removeItem(this.key)
    } catch {
      // storage refused (a sandboxed frame, blocked cookies): the token lives as long as the page
    }
  }
}

const refusedSite = () => `${SAYS} this page's origin (${location.origin}) is not one of the widget's allowed origins; the chat is not shown.`

function explain(error: unknown) {
  const status = error instanceof ApiError ? error.status : 0
  if (status === 403) return refusedSite()
  if (status === 404) return `${SAYS} no active widget has this data-widget-token; the chat is not shown.`
  return `${SAYS} the chat service could not be reached (${status || 'network error'}); the chat is not shown.`
}

class Widget {
  private readonly store: TokenStore
  private visitorToken: string | null
  /** The token of the session that ended here, presented by the next one so that it stays ended. */
  private endedToken: string | null = null
  private thread = new Thread()
  private readonly nodes = new Map<number, HTMLElement>()
  private live?: Live
  private polling?: ReturnType<typeof setInterval>
  private unread = 0
  private sending = false

  private readonly host = h('crm-webchat' as 'div')
  private readonly launcher = h('button', { type: 'button', class: 'launcher', 'aria-expanded': 'false', 'aria-controls': 'crm-panel' })
  private readonly badge = h('span', { class: 'badge', 'aria-hidden': 'true' })
  private readonly panel = h('div', { id: 'crm-panel', class: 'panel', role: 'dialog', 'aria-labelledby': 'crm-title' })
  private readonly log = h('ol', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Messages' })
  private readonly notice = h('p', { class: 'notice', role: 'alert' })
  private readonly about = h('div', { class: 'about' })
  private readonly name = h('input', { name: 'name', autocomplete: 'name', maxlength: '200' })
  private readonly email = h('input', { name: 'email', type: 'email', autocomplete: 'email', maxlength: '320' })
  private readonly text = h('textarea', { name: 'message', 'aria-label': 'Message', placeholder: 'Write a message…', maxlength: '5000', rows: '1' })
  private readonly send = h('button', { type: 'submit', class: 'send' }, 'Send')

  constructor(private readonly api: Api, private readonly base: string, widgetToken: string, private readonly config: WidgetConfig) {
    this.store = new TokenStore(storageKey(widgetToken))
    this.visitorToken = this.store.get()
    this.host.setAttribute('data-widget-token', widgetToken)
  }

  mount() {
    const color = /^#[0-9a-f]{6}$/i.test(this.config.color) ? this.config.color : '#1f5fbf'
    // CSSOM, not a style attribute: allowed by a CSP without 'unsafe-inline'.
    this.host.style.setProperty('display', 'block', 'important')
    this.host.style.setProperty('--accent', color)
    this.host.style.setProperty('--on-accent', textColorOn(color))
    const shadow = this.host.attachShadow({ mode: 'open' })
    adoptStyles(shadow)

    const title = this.config.title || 'Chat with us'
    this.launcher.append(chatIcon(), this.badge)
    this.badge.hidden = true
    this.notice.hidden = true
    this.panel.hidden = true
    this.about.append(
      h('label', {}, 'Name (optional)', this.name),
      h('label', {}, 'E-mail (optional)', this.email)
    )
    this.about.hidden = Boolean(this.visitorToken)
    const close = h('button', { type: 'button', class: 'close', 'aria-label': 'Minimize chat' }, '×')
    const form = h('form', { 'aria-label': 'Send a message' }, this.about, h('div', { class: 'compose' }, this.text, this.send))
    if (this.config.welcome_message) this.log.append(h('li', { class: 'msg welcome' }, this.config.welcome_message))
    this.panel.append(h('header', {}, h('h2', { id: 'crm-title' }, title), close), this.log, this.notice, form)
    const position = this.config.position === 'bottom-left' ? 'left' : 'right'
    shadow.append(h('div', { class: `root ${position}` }, this.panel, this.launcher))
    this.updateLauncher()

    this.launcher.addEventListener('click', () => (this.panel.hidden ? this.openPanel() : this.closePanel()))
    close.addEventListener('click', () => this.closePanel())
    this.panel.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault()
        this.closePanel()
      }
    })
    this.text.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault()
        form.requestSubmit ? form.requestSubmit() : void this.submit()
      }
    })
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      void this.submit()
    })
    document.body.append(this.host)
    if (this.visitorToken) void this.resume(this.visitorToken)
  }

  private openPanel() {
    this.panel.hidden = false
    this.unread = 0
    this.updateLauncher()
    this.scrollToEnd()
    this.text.focus()
  }

  private closePanel() {
    this.panel.hidden = true
    this.updateLauncher()
    this.launcher.focus()
  }

  private updateLauncher() {
    const open = !this.panel.hidden
    this.launcher.setAttribute('aria-expanded', String(open))
    const unread = this.unread ? ` (${this.unread} unread)` : ''
    this.launcher.setAttribute('aria-label', open ? 'Close chat' : `Open chat${unread}`)
    this.badge.textContent = String(this.unread)
    this.badge.hidden = this.unread === 0
  }

  private say(text: string | null) {
    this.notice.textContent = text ?? ''
    this.notice.hidden = !text
  }

  /** A stored session: its thread, then live replies. */
  private async resume(token: string) {
    try {
      for (const message of await this.api.messagesAfter(token, 0)) this.show(message, false)
    } catch (error) {
      if (this.ended(error)) return
    }
    this.startLive(token)
  }

  /** A 401 or 403 on the visitor's token: the conversation is no longer theirs, or closed. Forgets it. */
  private ended(error: unknown) {
    if (!(error instanceof ApiError) || (error.status !== 401 && error.status !== 403)) return false
    this.live?.stop()
    this.live = undefined
    clearInterval(this.polling)
    this.endedToken = this.visitorToken
    this.visitorToken = null
    this.store.set(null)
    this.thread = new Thread()
    for (const node of this.nodes.values()) node.remove()
    this.nodes.clear()
    this.about.hidden = false
    this.say('This conversation has ended. Write again to start a new one.')
    return true
  }

  private startLive(token: string) {
    if (this.live || token !== this.visitorToken) return
    this.live = new Live(socketUrl(this.base), token, {
      connected: () => void this.catchUp(token),
      event: (name, data) => this.onEvent(name, data),
      refused: () => {
        // The handshake refuses a closed chat, but also a token it could not check (a database
        // hiccup): the REST API tells which, and a live session gets its socket back a little later.
        this.live = undefined
        this.catchUp(token).then((open) => open && setTimeout(() => this.startLive(token), 5_000))
      },
      blocked: () => {
        // The site's CSP keeps the socket out: the thread is read every few seconds instead.
        console.warn(`${SAYS} this page's Content-Security-Policy does not allow ${socketOrigin(this.base)} in connect-src; replies arrive every few seconds instead of live.`)
        this.polling = setInterval(() => void this.catchUp(token), POLL_MS)
      }
    })
    this.live.start()
  }

  /** Reads what arrived while the socket was away (after the last message held); false when the session ended. */
  private async catchUp(token: string) {
    try {
      for (const message of await this.api.messagesAfter(token, this.thread.lastId())) this.show(message, true)
      return true
    } catch (error) {
      return !this.ended(error)
    }
  }

  private onEvent(name: string, data: ChatMessage) {
    if (!data || typeof data.id !== 'number') return
    if (name === `${EVENT} removed`) {
      this.thread.remove(data.id)
      this.nodes.get(data.id)?.remove()
      this.nodes.delete(data.id)
    } else if (name.startsWith(`${EVENT} `)) {
      this.show(data, true)
    }
  }

  /** Puts a message in its place in the log, once; a message already shown is redrawn (an edit). */
  private show(message: ChatMessage, live: boolean) {
    const placed = this.thread.add(message)
    const node = renderMessage(message)
    if (!placed.added) {
      this.nodes.get(message.id)?.replaceWith(node)
      this.nodes.set(message.id, node)
      return
    }
    const before = placed.before === null ? null : this.nodes.get(placed.before) ?? null
    const atEnd = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40
    this.log.insertBefore(node, before)
    this.nodes.set(message.id, node)
    if (atEnd || message.direction === 'inbound') this.scrollToEnd()
    if (live && message.direction === 'outbound' && this.panel.hidden) {
      this.unread++
      this.updateLauncher()
    }
  }

  private scrollToEnd() {
    this.log.scrollTop = this.log.scrollHeight
  }

  private async submit() {
    const content = this.text.value.trim()
    if (!content || this.sending) return
    this.sending = true
    this.send.disabled = true
    this.say(null)
    const pending = h('li', { class: 'msg inbound pending' }, h('span', { class: 'who' }, 'Sending: '), content)
    this.log.append(pending)
    this.scrollToEnd()
    this.text.value = ''
    let opening = !this.visitorToken
    try {
      const token = this.visitorToken ?? (await this.openSession())
      opening = false
      const message = await this.api.send(token, content)
      pending.remove()
      this.show(message, false)
    } catch (error) {
      pending.remove()
      if (!this.text.value) this.text.value = content
      // A refused session is about this page or the visitor's details; a refused send, about the session.
      if (opening || !this.ended(error)) this.say(failure(error))
    } finally {
      this.sending = false
      this.send.disabled = false
      this.text.focus()
    }
  }

  /** The first message opens the session (so that a visit without a message leaves no contact behind). */
  private async openSession() {
    const visitor: { name?: string; email?: string } = {}
    if (this.name.value.trim()) visitor.name = this.name.value.trim()
    if (this.email.value.trim()) visitor.email = this.email.value.trim()
    let session
    try {
      session = await this.api.openSession(visitor, this.endedToken)
    } catch (error) {
      if (error instanceof ApiError && error.status === 403) console.warn(refusedSite())
      throw error
    }
    this.endedToken = null
    this.visitorToken = session.visitor_token
    this.store.set(session.visitor_token)
    this.about.hidden = true
    this.startLive(session.visitor_token)
    return session.visitor_token
  }
}

function failure(error: unknown) {
  if (!(error instanceof ApiError) || error.status === 0) return 'Your message was not sent: check your connection and try again.'
  if (error.status === 400) return 'Your message was not sent: please check the e-mail address and the text.'
  if (error.status === 403) return `The chat is not available on this page: its address (${location.origin}) is not one of the sites this chat is set up for.`
  if (error.status === 429) return 'Too many messages at once: wait a moment and try again.'
  return 'Your message was not sent. Please try again.'
}

/** One message: who wrote it (for screen readers), its text as text, and the files the team sent. */
function renderMessage(message: ChatMessage) {
  const mine = message.direction === 'inbound'
  const item = h('li', { class: `msg ${mine ? 'inbound' : 'outbound'}`, 'data-message-id': String(message.id) },
    h('span', { class: 'who' }, mine ? 'You: ' : 'Team: '), h('span', { class: 'text' }, message.content))
  for (const file of message.files ?? []) {
    const url = safeUrl(file.url)
    if (!url) continue
    const link = h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' })
    if (file.file_type.startsWith('image/')) link.append(h('img', { src: url, alt: file.file_name || 'Image' }))
    else link.append(file.file_name || 'File')
    item.append(h('div', {}, link))
  }
  return item
}

function chatIcon() {
  const ns = 'http://www.w3.org/2000/svg'
  const svg = document.createElementNS(ns, 'svg')
  svg.setAttribute('viewBox', '0 0 24 24')
  svg.setAttribute('aria-hidden', 'true')
  const path = document.createElementNS(ns, 'path')
  path.setAttribute('d', 'M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H8l-5 4V5a2 2 0 0 1 1-2z')
  svg.append(path)
  return svg
}

/** A constructed stylesheet (not subject to style-src), or a <style> in the shadow root where there are none. */
function adoptStyles(shadow: ShadowRoot) {
  try {
    const sheet = new CSSStyleSheet()
    sheet.replaceSync(STYLES)
    shadow.adoptedStyleSheets = [sheet]
  } catch {
    shadow.append(h('style', {}, STYLES))
  }
}

function boot() {
  const script = document.currentScript as HTMLScriptElement | null
  const widgetToken = script?.getAttribute('data-widget-token')
  if (!script || !widgetToken) {
    console.warn(`${SAYS} the script tag needs data-widget-token="<widget_token>"; the chat is not shown.`)
    return
  }
  if (document.querySelector(`crm-webchat[data-widget-token="${CSS.escape(widgetToken)}"]`)) return
  const base = apiBase(script.src)
  const api = new Api(base, widgetToken)
  api.config().then(
    (config) => {
      const mount = () => new Widget(api, base, widgetToken, config).mount()
      if (document.body) mount()
      else document.addEventListener('DOMContentLoaded', mount, { once: true })
    },
    (error) => console.warn(explain(error))
  )
}

boot()
