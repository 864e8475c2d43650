import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import zlib from 'node:zlib'
import { NotFound } from '@feathersjs/errors'
import type { Context, Next } from 'koa'
import type { Application } from '../../../declarations.js'
import { escapeHtml } from '../../../link-pages.js'
import { limitPerAddress } from '../../../rate-limit/per-address.js'
import { isLive, loadAccount } from './accounts.js'

/** The widget script as served: its bytes, gzipped once, and their ETag. */
interface WidgetScript {
  body: Buffer
  gzip: Buffer
  etag: string
}

/**
 * The widget's script. Compiled, the service serves dist/webchat-widget.js, which scripts/build.mjs
 * bundles next to it; from its TypeScript sources (tests, `npm run dev`) it bundles widget/ in
 * memory with the same options (widget/build-options.mjs), so that what it serves is never older
 * than the sources it runs.
 */
async function loadWidgetScript(): Promise<WidgetScript> {
  const here = fileURLToPath(import.meta.url)
  const compiled = here.endsWith('.js')
  // src/services/inbox/channels → the repository; dist/src/services/inbox/channels → dist.
  const root = path.resolve(path.dirname(here), '..', '..', '..', '..')
  let body: Buffer
  if (compiled) {
    body = fs.readFileSync(path.join(root, 'webchat-widget.js'))
  } else {
    const { build } = await import('esbuild')
    const { widgetBuildOptions } = await import(pathToFileURL(path.join(root, 'widget', 'build-options.mjs')).href)
    const { outputFiles } = await build(widgetBuildOptions(root))
    body = Buffer.from(outputFiles![0].contents)
  }
  const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  return { body, gzip: zlib.gzipSync(body, { level: 9 }), etag }
}

let script: Promise<WidgetScript> | undefined
/** Loaded on first request and kept (a failed load is tried again by the next one). */
export const widgetScript = () => {
  script ??= loadWidgetScript().catch((error) => {
    script = undefined
    throw error
  })
  return script
}

const DEMO_STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}' +
  'pre{background:#f4f5f7;padding:1rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}'
const styleHash = `'sha256-${crypto.createHash('sha256').update(DEMO_STYLE).digest('base64')}'`

/**
 * The demo page's own policy: the widget must work under it as on a strict site. The widget loads
 * from this origin and connects to it ('self' covers its WebSocket); the team's images may be on a
 * storage host. Referrer-Policy same-origin: the widget's calls name this page as their Referer,
 * which is what lets the service's own origin open this widget's chat (pageMayChat).
 */
const DEMO_POLICY = [
  "default-src 'none'", "script-src 'self'", "connect-src 'self'", "img-src 'self' https:", `style-src ${styleHash}`,
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"
].join('; ')

/**
 * Why the chat will refuse this demo page, when it will: the page is open at another origin than
 * PUBLIC_URL's (127.0.0.1 for localhost, an internal host name behind a proxy) and the widget's
 * allowed_origins do not name it, so the service does not know this page for the demo. Said on
 * the page itself, where the person trying it looks.
 */
function originMismatch(pageOrigin: string, publicUrl: string, allowedOrigins: string[], demoPath: string) {
  const publicOrigin = new URL(publicUrl).origin
  if (pageOrigin === publicOrigin || allowedOrigins.length === 0 || allowedOrigins.includes(pageOrigin)) return ''
  const there = `${publicOrigin}${demoPath}`
  return `<p role="alert"><strong>The chat will refuse this page.</strong> It is open at ${escapeHtml(pageOrigin)}, but the service's PUBLIC_URL is ${escapeHtml(publicUrl)}, and the widget's <code>allowed_origins</code> do not list ${escapeHtml(pageOrigin)}. Open <a href="${escapeHtml(there)}">this page at PUBLIC_URL</a>, set PUBLIC_URL to the address you use, or add ${escapeHtml(pageOrigin)} to <code>allowed_origins</code>.</p>`
}

function demoPage(title: string, widgetToken: string, scriptUrl: string, warning = '') {
  const snippet = `<script src="${scriptUrl}" data-widget-token="${widgetToken}" async></script>`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}: web chat demo</title>
<style>${DEMO_STYLE}</style>
</head>
<body>
<main>
  <h1>${escapeHtml(title)}: web chat demo</h1>
  ${warning}
  <p>This page carries your web chat widget as your site's visitors will see it. Open it with the button in the corner and write: the message reaches your inbox, and your team's replies appear here as they are sent.</p>
  <p>To put the chat on your site, add this line to its pages and list the site's origin in the widget's <code>allowed_origins</code>:</p>
  <pre><code>${escapeHtml(snippet)}</code></pre>
  <noscript><p>The chat needs JavaScript.</p></noscript>
</main>
<script src="../widget.js" data-widget-token="${escapeHtml(widgetToken)}" async></script>
</body>
</html>`
}

const DEMO_PATH = /^\/public\/webchat\/([^/]+)\/demo$/

/**
 * Koa middleware: GET /public/webchat/widget.js (the script sites embed) and
 * GET /public/webchat/<widget_token>/demo (a page of the service carrying the widget, to try it).
 */
export const webchatWidget = (app: Application) => {
  const limit = limitPerAddress(app)
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next()
    if (ctx.path === '/public/webchat/widget.js') return serveScript(ctx)
    const demo = DEMO_PATH.exec(ctx.path)
    if (demo) return limit(ctx, () => serveDemo(app, ctx, demo[1]))
    return next()
  }
}

async function serveScript(ctx: Context) {
  const { body, gzip, etag } = await widgetScript()
  ctx.set('ETag', etag)
  // Sites keep a copy for five minutes, then revalidate (304 while unchanged): a new release
  // reaches every site within minutes without a versioned URL in their pages.
  ctx.set('Cache-Control', 'public, max-age=300')
  ctx.set('Vary', 'Accept-Encoding')
  ctx.set('X-Content-Type-Options', 'nosniff')
  ctx.set('Cross-Origin-Resource-Policy', 'cross-origin')
  ctx.type = 'text/javascript; charset=utf-8'
  if (ctx.get('If-None-Match').split(/\s*,\s*/).includes(etag)) {
    ctx.status = 304
    return
  }
  if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    ctx.set('Content-Encoding', 'gzip')
    ctx.body = gzip
  } else {
    ctx.body = body
  }
}

async function serveDemo(app: Application, ctx: Context, widgetToken: string) {
  // Widget tokens are URL-safe: a token that needed decoding is no widget's.
  const account = /^[\w-]+$/.test(widgetToken) ? await loadAccount(app, { widget_token: widgetToken, channel: 'webchat' }) : undefined
  if (!isLive(account)) throw new NotFound('No web chat here')
  ctx.set('Cache-Control', 'no-store')
  ctx.type = 'text/html; charset=utf-8'
  const publicUrl = app.get('publicUrl').replace(/\/$/, '')
  ctx.set('Content-Security-Policy', DEMO_POLICY)
  ctx.set('Referrer-Policy', 'same-origin')
  ctx.set('X-Content-Type-Options', 'nosniff')
  const warning = originMismatch(`${ctx.protocol}://${ctx.host}`, publicUrl, account.config.allowed_origins ?? [], ctx.path)
  ctx.body = demoPage(account.config.title || account.name, widgetToken, `${publicUrl}/public/webchat/widget.js`, warning)
}
