import crypto from 'node:crypto'
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import { isPrivateAddress } from './addresses.js'

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
