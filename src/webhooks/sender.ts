import crypto from 'node:crypto'
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'

/**
 * The wire side of outbound webhooks (Standard Webhooks, https://www.standardwebhooks.com):
 * secrets, signatures, and one POST to a receiver that may only reach public addresses.
 */

export const SECRET_PREFIX = 'whsec_'

/** A new signing secret: 'whsec_' and the base64 of 32 random bytes. */
export const newSecret = () => `${SECRET_PREFIX}${crypto.randomBytes(32).toString('base64')}`

/** v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">, keyed with the secret's decoded bytes. */
export function signature(secret: string, id: string, timestamp: number, body: string) {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
  return `v1,${crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

// Loopback, link-local, private, shared (CGNAT), unspecified, benchmarking, multicast and reserved
// ranges: a receiver there is inside someone's network, not on the Internet.
const REFUSED = new net.BlockList()
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) REFUSED.addSubnet(address, prefix, 'ipv4')
for (const [address, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) REFUSED.addSubnet(address, prefix, 'ipv6')

/** Whether an IP address is one a webhook must not reach (IPv4-mapped and NAT64 IPv6 forms are checked as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address)
  if (family === 4) return REFUSED.check(address, 'ipv4')
  if (family !== 6) return true
  const embedded = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (embedded) return REFUSED.check(embedded, 'ipv4')
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (mapped) {
    const [high, low] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)]
    return REFUSED.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4')
  }
  return REFUSED.check(address, 'ipv6')
}

export class RefusedAddress extends Error {
  constructor(address: string) {
    super(`refused: ${address} is a loopback, link-local or private address (WEBHOOK_ALLOW_PRIVATE is off)`)
  }
}

/**
 * dns.lookup that refuses private addresses. The connection is made to the very address checked
 * here, so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing.
 */
const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, options as dns.LookupOptions, (error: NodeJS.ErrnoException | null, address: any, family?: number) => {
    if (error) return (callback as any)(error)
    const addresses: { address: string }[] = Array.isArray(address) ? address : [{ address }]
    const refused = addresses.find((entry) => isPrivateAddress(entry.address))
    if (refused) return (callback as any)(new RefusedAddress(refused.address))
    return (callback as any)(null, address, family)
  })
}

export interface WebhookRequest {
  url: string
  body: string
  headers: Record<string, string>
  timeoutMs: number
  allowPrivate: boolean
}

export interface WebhookResponse {
  status: number
}

/** One POST. Resolves with the receiver's status; rejects on a refused address, a network error or the time limit. */
export function postWebhook(request: WebhookRequest): Promise<WebhookResponse> {
  const url = new URL(request.url)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!request.allowPrivate && net.isIP(host) && isPrivateAddress(host)) return Promise.reject(new RefusedAddress(host))
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const outgoing = client.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'crm-api-webhooks', ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        timeout: request.timeoutMs,
        ...(request.allowPrivate ? {} : { lookup: guardedLookup })
      },
      (response) => {
        // Only the status matters; the body is read and dropped so that the socket is released.
        response.resume()
        response.on('end', () => resolve({ status: response.statusCode ?? 0 }))
        response.on('error', reject)
      }
    )
    const timer = setTimeout(() => outgoing.destroy(new Error(`timeout: no answer within ${request.timeoutMs} ms`)), request.timeoutMs)
    outgoing.on('close', () => clearTimeout(timer))
    outgoing.on('timeout', () => outgoing.destroy(new Error(`timeout: no answer within ${request.timeoutMs} ms`)))
    outgoing.on('error', reject)
    outgoing.end(request.body)
  })
}
