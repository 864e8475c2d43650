import http from 'node:http'
import type { AddressInfo } from 'node:net'
import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { browserMissing, launchBrowser } from '../helpers/browser.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { freePort } from '../helpers/process.js'
import { created } from '../conversations/fixtures.js'
import { connectWebchat } from './fixtures.js'

const missing = browserMissing()
const XSS = '<img src=x onerror=alert(1)>'
/** A site stylesheet that would hide or restyle any widget living in the page's own DOM. */
const HOSTILE_CSS = 'div, button, ol, li, form, textarea, input, header { display: none !important; color: red !important; } * { font-size: 40px !important; }'

/**
 * The widget as a site's visitors get it: the script from the API's origin, in pages of other
 * loopback origins served here, under a strict Content-Security-Policy, in headless Chromium.
 * localhost:<port> is the shop's allowed origin; 127.0.0.1:<same port> is a site that is not.
 */
describe.skipIf(missing)(`the web chat widget in a browser${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let t: TestApp
  let service: http.Server
  /** The API's origin: where the service listens, its PUBLIC_URL. */
  let api: string
  let site: http.Server
  let shop: string
  let stranger: string
  let acme: Tenant
  let widget: any
  let browser: Browser

  beforeAll(async () => {
    // PUBLIC_URL is where the service listens: the demo page's origin, and the team's files' URLs.
    const port = await freePort()
    api = `http://127.0.0.1:${port}`
    t = await startApp({ publicRateLimitPoints: 100_000, publicUrl: api })
    service = http.createServer(t.app.callback())
    ;(t.app as any).io.attach(service)
    await new Promise<void>((resolve) => service.listen(port, '127.0.0.1', resolve))
    site = http.createServer((req, res) => {
      const url = new URL(req.url!, 'http://site')
      if (url.pathname === '/site.css') {
        res.writeHead(200, { 'Content-Type': 'text/css' }).end(HOSTILE_CSS)
        return
      }
      const token = url.searchParams.get('widget') ?? ''
      // The API's origin for scripts, images and connections (its WebSocket origin named as well:
      // CSP does not extend http: sources to ws:), and nothing else: no inline script or style.
      // ?socket=refused: a policy that names the API's https origin only, without its WebSocket's.
      const connect = url.searchParams.get('socket') === 'refused' ? api : `${api} ${api.replace('http', 'ws')}`
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Security-Policy': `default-src 'none'; script-src ${api}; connect-src ${connect}; img-src ${api}; style-src 'self'`
      })
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop ${url.pathname}</title>
<link rel="stylesheet" href="/site.css"></head>
<body><h1>Shop</h1><p>Page ${url.pathname}</p>
<script src="${api}/public/webchat/widget.js" data-widget-token="${token}" async></script></body></html>`)
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    const sitePort = (site.address() as AddressInfo).port
    shop = `http://localhost:${sitePort}`
    stranger = `http://127.0.0.1:${sitePort}`
    acme = await createTenant(t, 'Acme')
    widget = await connectWebchat(t, acme, { allowed_origins: [shop], welcome_message: 'Hi! How can we help?', color: '#0a7d39', position: 'bottom-left' })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    site?.closeAllConnections()
    await new Promise((resolve) => site?.close(resolve))
    ;(t?.app as any)?.io?.disconnectSockets(true)
    service?.closeAllConnections()
    await new Promise((resolve) => service?.close(resolve))
    await t?.close()
  })

  interface Visit {
    page: Page
    /** The console lines of the page, CSP reports included. */
    console: string[]
    dialogs: string[]
  }

  async function visit(context: BrowserContext, url: string): Promise<Visit> {
    const page = await context.newPage()
    const lines: string[] = []
    const dialogs: string[] = []
    page.on('console', (message) => lines.push(`${message.type()}: ${message.text()}`))
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    await page.goto(url)
    return { page, console: lines, dialogs }
  }
  const shopPage = (path = '/') => `${shop}${path}?widget=${widget.widget_token}`
  const launcher = (page: Page) => page.getByRole('button', { name: /^Open chat|^Close chat/ })
  const log = (page: Page) => page.getByRole('log', { name: 'Messages' })
  /** The messages the widget shows, as their visible text (the hidden "You: "/"Team: " prefix dropped). */
  const shown = (page: Page) => log(page).locator('li[data-message-id] .text').allTextContents()
  const visitorToken = (page: Page) => page.evaluate((key) => localStorage.getItem(key), `crm-webchat:${widget.widget_token}`)
  const conversationOf = async (page: Page) => {
    const res = await t.http().get('/public/webchat/messages').set('X-Visitor-Token', (await visitorToken(page))!)
    return res.body.data[0].conversation_id as number
  }
  const teamSees = async (conversationId: number) =>
    (await t.http().get('/conversation-messages-webchat').set(acme.key).query({ conversation_id: conversationId, $sort: { id: 1 } })).body.data as any[]
  const reply = async (conversationId: number, body: Record<string, unknown>) =>
    created(await t.http().post('/conversation-messages-transform-outgoing-webchat').set(acme.key).send({ conversation_id: conversationId, ...body }), 'reply')
  async function write(page: Page, text: string) {
    await page.getByRole('textbox', { name: 'Message' }).fill(text)
    await page.getByRole('button', { name: 'Send' }).click()
  }
  const cspReports = (lines: string[]) => lines.filter((line) => /Content Security Policy|Refused to/i.test(line))

  it('when a page of an allowed origin loads the script under a strict CSP, then the widget shows; the visitor writes, the team reads it over REST and its reply (with an image) appears within 2 s; after a reload and on another page the thread is back', async () => {
    const context = await browser.newContext()
    const { page, console: lines } = await visit(context, shopPage('/'))
    await expect.poll(() => launcher(page).count()).toBe(1)
    const panel = page.getByRole('dialog', { name: 'Chat with us' })
    expect(await panel.isVisible()).toBe(false)
    // In the bottom-left corner, in the account's colour, whatever the site's CSS says.
    const box = (await launcher(page).boundingBox())!
    expect(box.x).toBeLessThan(100)
    expect(await launcher(page).evaluate((button) => getComputedStyle(button).backgroundColor)).toBe('rgb(10, 125, 57)')

    await launcher(page).click()
    expect(await panel.isVisible()).toBe(true)
    await expect.poll(() => log(page).textContent()).toContain('Hi! How can we help?')
    expect(await page.evaluate(() => document.querySelector('crm-webchat')!.shadowRoot!.querySelector('[role=log]')!.getAttribute('aria-live'))).toBe('polite')
    expect(await visitorToken(page)).toBeNull()

    await page.getByLabel('Name (optional)').fill('Wanda Widget')
    await page.getByLabel('E-mail (optional)').fill('wanda.widget@example.test')
    await write(page, 'Do you ship to Spain?')
    await expect.poll(() => shown(page)).toEqual(['Do you ship to Spain?'])
    expect(await page.getByLabel('Name (optional)').isVisible()).toBe(false)

    const conversationId = await conversationOf(page)
    const inbox = await teamSees(conversationId)
    expect(inbox.map((m) => [m.direction, m.content])).toEqual([['inbound', 'Do you ship to Spain?']])
    const conversation = (await t.http().get(`/conversations/${conversationId}`).set(acme.key)).body
    expect(conversation).toMatchObject({ channel: 'webchat', channel_account_id: widget.id })
    expect(conversation.contact).toMatchObject({ first_name: 'Wanda', last_name: 'Widget', email: 'wanda.widget@example.test' })

    const sent = Date.now()
    await reply(conversationId, { content: 'Yes, in 3 days' })
    await expect.poll(() => shown(page), { timeout: 2_000 }).toEqual(['Do you ship to Spain?', 'Yes, in 3 days'])
    expect(Date.now() - sent).toBeLessThan(2_000)

    // A file the team sends: an image, shown as one and linked.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
    const signed = created(await t.http().post('/storage-url-signing').set(acme.key)
      .send({ type: 'conversation-file', file_name: 'route.png', content_type: 'image/png', file_size: png.length }), 'signed upload')
    const { pathname, search } = new URL(signed.upload_url)
    expect((await t.http().put(`${pathname}${search}`).set(signed.headers).send(png)).status).toBe(200)
    const file = created(await t.http().post('/conversation-files').set(acme.key)
      .send({ conversation_id: conversationId, storage_key: signed.storage_key, file_name: 'route.png', file_type: 'image/png', file_size: png.length }), 'file')
    await reply(conversationId, { content: 'Here is the route', file_ids: [file.id] })
    const image = log(page).getByRole('img', { name: 'route.png' })
    await expect.poll(() => image.count(), { timeout: 2_000 }).toBe(1)
    expect(await image.evaluate((img: HTMLImageElement) => img.closest('a')!.href)).toBe(file.url)
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1)

    // Closed, a reply raises the unread badge on the launcher; opening clears it.
    await page.keyboard.press('Escape')
    expect(await panel.isVisible()).toBe(false)
    await reply(conversationId, { content: 'Anything else?' })
    await expect.poll(() => launcher(page).getAttribute('aria-label'), { timeout: 2_000 }).toBe('Open chat (1 unread)')
    expect(await launcher(page).locator('.badge').textContent()).toBe('1')
    await launcher(page).click()
    expect(await launcher(page).getAttribute('aria-label')).toBe('Close chat')
    expect(await launcher(page).locator('.badge').isVisible()).toBe(false)

    const thread = ['Do you ship to Spain?', 'Yes, in 3 days', 'Here is the route', 'Anything else?']
    await page.reload()
    await launcher(page).click()
    await expect.poll(() => shown(page)).toEqual(thread)
    const other = await visit(context, shopPage('/checkout'))
    await launcher(other.page).click()
    await expect.poll(() => shown(other.page)).toEqual(thread)
    expect(await conversationOf(other.page)).toBe(conversationId)

    expect(cspReports([...lines, ...other.console])).toEqual([])
    await context.close()
  })

  it('when a second browser profile opens the same site, then it sees nothing of the first visitor\'s thread, and neither hears the other', async () => {
    const first = await browser.newContext()
    const second = await browser.newContext()
    try {
      const one = await visit(first, shopPage())
      await launcher(one.page).click()
      await write(one.page, 'My order number is 4711')
      await expect.poll(() => shown(one.page)).toEqual(['My order number is 4711'])

      const two = await visit(second, shopPage())
      await launcher(two.page).click()
      await expect.poll(() => log(two.page).textContent()).toContain('Hi! How can we help?')
      expect(await visitorToken(two.page)).toBeNull()
      expect(await shown(two.page)).toEqual([])
      await write(two.page, 'Hello from elsewhere')
      await expect.poll(() => shown(two.page)).toEqual(['Hello from elsewhere'])
      expect(await conversationOf(two.page)).not.toBe(await conversationOf(one.page))

      await reply(await conversationOf(one.page), { content: 'Order 4711 ships today' })
      await expect.poll(() => shown(one.page), { timeout: 2_000 }).toEqual(['My order number is 4711', 'Order 4711 ships today'])
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(await shown(two.page)).toEqual(['Hello from elsewhere'])
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('when the team blocks the conversation, then the widget says it has ended; the next message opens a new session, which ends the earlier one for good', async () => {
    const context = await browser.newContext()
    const { page } = await visit(context, shopPage())
    await launcher(page).click()
    await write(page, 'Is anyone there?')
    await expect.poll(() => shown(page)).toEqual(['Is anyone there?'])
    const earlierToken = (await visitorToken(page))!
    const earlierConversation = await conversationOf(page)
    await t.http().patch(`/conversations/${earlierConversation}`).set(acme.key).send({ is_blocked: true }).expect(200)

    await write(page, 'Hello?')
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('This conversation has ended. Write again to start a new one.')
    await write(page, 'Starting over')
    await expect.poll(() => shown(page)).toEqual(['Starting over'])
    expect(await visitorToken(page)).not.toBe(earlierToken)
    // Unblocked, the earlier thread is the team's again, but no longer the earlier token's.
    await t.http().patch(`/conversations/${earlierConversation}`).set(acme.key).send({ is_blocked: false }).expect(200)
    const earlier = await t.http().get('/public/webchat/messages').set('X-Visitor-Token', earlierToken)
    expect(earlier.status).toBe(401)
    expect(earlier.body.message).toBe('This chat session has ended')
    await context.close()
  })

  it('when a page of an origin outside allowed_origins loads the script, then no widget shows, one console line says why, and no session was opened', async () => {
    const chats = async () => {
      const res = await t.http().get('/conversations').set(acme.key).query({ channel_account_id: widget.id })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body.total as number
    }
    const before = await chats()
    expect(before).toEqual(expect.any(Number))
    const context = await browser.newContext()
    const { page, console: lines } = await visit(context, `${stranger}/?widget=${widget.widget_token}`)
    await expect.poll(() => lines.filter((line) => line.includes('CRM web chat'))).toEqual([
      `warning: CRM web chat: this page's origin (${stranger}) is not one of the widget's allowed origins; the chat is not shown.`
    ])
    expect(await page.locator('crm-webchat').count()).toBe(0)
    expect(await launcher(page).count()).toBe(0)
    expect(await chats()).toBe(before)
    await context.close()
  })

  it('when a visitor uses the keyboard only, then Tab reaches the launcher, Enter opens the chat with focus in the message box, Enter sends, Escape closes and focus returns to the launcher; at 320 px the panel fits', async () => {
    const context = await browser.newContext({ viewport: { width: 320, height: 640 } })
    const { page } = await visit(context, shopPage())
    await expect.poll(() => launcher(page).count()).toBe(1)
    const focused = () => page.evaluate(() => {
      const host = document.activeElement
      const inner = host?.shadowRoot?.activeElement
      return inner ? inner.getAttribute('aria-label') ?? inner.textContent : host?.tagName
    })
    await page.keyboard.press('Tab')
    expect(await focused()).toBe('Open chat')
    await page.keyboard.press('Enter')
    const panel = page.getByRole('dialog', { name: 'Chat with us' })
    expect(await panel.isVisible()).toBe(true)
    expect(await focused()).toBe('Message')
    const box = (await panel.boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(320)
    expect(box.y).toBeGreaterThanOrEqual(0)

    await page.keyboard.type('Typed with the keyboard')
    await page.keyboard.press('Enter')
    await expect.poll(() => shown(page)).toEqual(['Typed with the keyboard'])
    expect(await focused()).toBe('Message')
    await page.keyboard.press('Escape')
    expect(await panel.isVisible()).toBe(false)
    expect(await focused()).toBe('Open chat')
    await context.close()
  })

  it(`when the visitor and the team write ${XSS}, then it shows as text on both sides and runs nothing`, async () => {
    const context = await browser.newContext()
    const { page, dialogs } = await visit(context, shopPage())
    await launcher(page).click()
    await write(page, XSS)
    await expect.poll(() => shown(page)).toEqual([XSS])
    const conversationId = await conversationOf(page)
    expect((await teamSees(conversationId)).map((m) => m.content)).toEqual([XSS])
    await reply(conversationId, { content: `Team says ${XSS}` })
    await expect.poll(() => shown(page), { timeout: 2_000 }).toEqual([XSS, `Team says ${XSS}`])
    expect(await log(page).locator('img').count()).toBe(0)
    expect(dialogs).toEqual([])
    await context.close()
  })

  it('when the network drops and the team replies meanwhile, then the widget reconnects and shows the reply once, nothing twice', async () => {
    const context = await browser.newContext()
    const { page } = await visit(context, shopPage())
    await launcher(page).click()
    await write(page, 'Still there?')
    await expect.poll(() => shown(page)).toEqual(['Still there?'])
    const conversationId = await conversationOf(page)
    await reply(conversationId, { content: 'Yes' })
    await expect.poll(() => shown(page), { timeout: 2_000 }).toEqual(['Still there?', 'Yes'])

    await context.setOffline(true)
    ;(t.app as any).io.disconnectSockets(true)
    await reply(conversationId, { content: 'Sent while you were away' })
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(await shown(page)).toEqual(['Still there?', 'Yes'])
    await context.setOffline(false)
    await expect.poll(() => shown(page), { timeout: 10_000 }).toEqual(['Still there?', 'Yes', 'Sent while you were away'])
    await reply(conversationId, { content: 'Back live' })
    await expect.poll(() => shown(page), { timeout: 2_000 }).toEqual(['Still there?', 'Yes', 'Sent while you were away', 'Back live'])
    await context.close()
  })

  it("when a team opens its widget's demo page, then it chats with itself from the page and the inbox; the service's origin opens no session for any other page", async () => {
    const res = await t.http().get(`/public/webchat/${widget.widget_token}/demo`)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['content-security-policy']).toContain("script-src 'self'")
    const unknown = await t.http().get(`/public/webchat/${'x'.repeat(43)}/demo`)
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ name: 'NotFound', message: 'No web chat here' })

    const context = await browser.newContext()
    const { page, console: lines } = await visit(context, `${api}/public/webchat/${widget.widget_token}/demo`)
    await launcher(page).click()
    await write(page, 'Trying our own widget')
    await expect.poll(() => shown(page)).toEqual(['Trying our own widget'])
    const conversationId = await conversationOf(page)
    expect((await teamSees(conversationId)).map((m) => m.content)).toEqual(['Trying our own widget'])
    await reply(conversationId, { content: 'It works' })
    await expect.poll(() => shown(page), { timeout: 2_000 }).toEqual(['Trying our own widget', 'It works'])
    expect(cspReports(lines)).toEqual([])
    await context.close()

    const session = (headers: Record<string, string>) => t.http().post(`/public/webchat/${widget.widget_token}/sessions`).set(headers).send({})
    const demo = `${api}/public/webchat/${widget.widget_token}/demo`
    expect((await session({ Origin: api, Referer: demo })).status).toBe(201)
    expect((await session({ Origin: api, Referer: `${api}/docs` })).status).toBe(403)
    expect((await session({ Origin: api })).status).toBe(403)
    const otherWidget = await connectWebchat(t, acme, { allowed_origins: [shop] })
    expect((await session({ Origin: api, Referer: `${api}/public/webchat/${otherWidget.widget_token}/demo` })).status).toBe(403)
    expect((await session({ Origin: stranger, Referer: demo })).status).toBe(403)
  })

  it("when the demo page is opened at another address than PUBLIC_URL's, then the page says why the chat will refuse it and links to PUBLIC_URL's, and the widget's refusal names the page's address", async () => {
    // The service listens on 127.0.0.1, which is PUBLIC_URL; localhost reaches the same port.
    const elsewhere = api.replace('127.0.0.1', 'localhost')
    const context = await browser.newContext()
    const { page } = await visit(context, `${elsewhere}/public/webchat/${widget.widget_token}/demo`)
    const alert = page.locator('main p[role="alert"]')
    await expect.poll(() => alert.innerText()).toContain(`It is open at ${elsewhere}, but the service's PUBLIC_URL is ${api}`)
    expect(await alert.getByRole('link', { name: 'this page at PUBLIC_URL' }).getAttribute('href')).toBe(`${api}/public/webchat/${widget.widget_token}/demo`)
    await launcher(page).click()
    await write(page, 'Anyone there?')
    await page.getByText(`The chat is not available on this page: its address (${elsewhere}) is not one of the sites this chat is set up for.`).waitFor()
    await context.close()

    const atPublicUrl = await t.http().get(`/public/webchat/${widget.widget_token}/demo`).set('Host', new URL(api).host)
    expect(atPublicUrl.text).not.toContain('role="alert"')
  })

  it("when the site's policy names the API's origin for connections but not its WebSocket's, then the widget says so once and still shows the team's replies, read every few seconds", async () => {
    const context = await browser.newContext()
    const { page, console: lines } = await visit(context, `${shopPage()}&socket=refused`)
    await launcher(page).click()
    await write(page, 'Is the socket allowed here?')
    await expect.poll(() => shown(page)).toEqual(['Is the socket allowed here?'])
    await expect.poll(() => lines.filter((line) => line.includes('CRM web chat'))).toEqual([
      `warning: CRM web chat: this page's Content-Security-Policy does not allow ${api.replace('http', 'ws')} in connect-src; replies arrive every few seconds instead of live.`
    ])
    await reply(await conversationOf(page), { content: 'Polled, not pushed' })
    await expect.poll(() => shown(page), { timeout: 5_000 }).toEqual(['Is the socket allowed here?', 'Polled, not pushed'])
    // The browser refused one attempt; the widget made no other.
    expect(cspReports(lines).length).toBe(1)
    await context.close()
  })

  it('when the script is fetched, then it is JavaScript with caching headers, under 25 KB gzipped, and revalidates with 304', async () => {
    const res = await fetch(`${api}/public/webchat/widget.js`, { headers: { 'Accept-Encoding': 'gzip' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('public, max-age=300')
    expect(res.headers.get('content-encoding')).toBe('gzip')
    const source = await res.text()
    expect(source).not.toMatch(/\beval\(|new Function\(|innerHTML/)
    expect(zlib.gzipSync(source, { level: 9 }).length).toBeLessThan(25 * 1024)
    const again = await fetch(`${api}/public/webchat/widget.js`, { headers: { 'If-None-Match': res.headers.get('etag')! } })
    expect(again.status).toBe(304)
  })
})
