/** The API's base URL, from the widget script's own URL (<base>/public/webchat/widget.js). */
export function apiBase(scriptSrc: string) {
  const url = new URL(scriptSrc)
  return `${url.origin}${url.pathname.replace(/\/public\/webchat\/widget\.js$/, '')}`
}

/** Socket.io's WebSocket endpoint under that base (Engine.IO protocol 4). */
export function socketUrl(base: string) {
  return `${base.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`
}

/** The WebSocket's origin (what a site's connect-src must name besides the API's https origin). */
export const socketOrigin = (base: string) => new URL(socketUrl(base)).origin

/** Where the visitor token of a widget is kept in the site's localStorage: one per widget token. */
export const storageKey = (widgetToken: string) => `crm-webchat:${widgetToken}`

/** Black or white, whichever reads better on the accent colour (#rrggbb), by WCAG relative luminance. */
export function textColorOn(hex: string) {
  const channels = [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16) / 255)
  const [r, g, b] = channels.map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
  // Contrast with white is (1.05)/(L+0.05), with black (L+0.05)/0.05: white wins below L ≈ 0.179.
  return luminance > 0.179 ? '#111111' : '#ffffff'
}

/** A file URL the widget may link to: http(s) only (never javascript: or data:). */
export function safeUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url)
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined
  } catch {
    return undefined
  }
}

/** The delay before reconnect attempt n (0-based): doubling from half a second, at most 15 s, with jitter. */
export const retryDelay = (attempt: number, random = Math.random) => Math.min(15_000, 500 * 2 ** attempt) * (0.75 + random() * 0.5)
