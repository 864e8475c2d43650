import crypto from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import querystring from 'node:querystring'
import type { TestApp } from '../helpers/app.js'

export interface RecordedRequest {
  method: string
  path: string
  headers: http.IncomingHttpHeaders
  body: string
  /** The JSON body (Graph API) or the form (Twilio), as parsed by the test. */
  json?: any
  form?: Record<string, string | string[]>
}

interface Answer {
  status: number
  body: unknown
  headers?: Record<string, string>
  /** Answer this late (a slow provider). */
  delayMs?: number
}

/**
 * A provider double on loopback: records every request it receives and answers with the
 * provider's documented shapes, or with the answers a test queued (errors, throttling).
 */
export class FakeProvider {
  readonly requests: RecordedRequest[] = []
  /** Provider ids (page, phone number id, Twilio number) that only these credentials may read; any others answer to anyone. */
  readonly grants = new Map<string, Record<string, string>>()
  /** Every request since the start (not reset): the ids the double hands out stay unique. */
  private served = 0
  private queued: Answer[] = []
  private server = http.createServer((req, res) => this.handle(req, res))
  url = ''

  constructor(private answer: (request: RecordedRequest, count: number, provider: FakeProvider) => Answer) {}

  /** Only these credentials own this id from now on (the verification at connect time asks for it). */
  grant(id: string, credentials: Record<string, string>) {
    this.grants.set(id, credentials)
    return this
  }

  async start() {
    // Node closes an idle keep-alive socket after 5 s, and a send that picks up the socket at that
    // moment fails with "other side closed" before the double sees it: an attempt the test did not
    // count. Slow runs (CI under load) hit that window, so the double keeps its sockets open.
    this.server.keepAliveTimeout = 120_000
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  async stop() {
    await new Promise((resolve) => this.server.close(resolve))
  }

  /** The next answers, in order, before the default ones resume. */
  queue(...answers: Answer[]) {
    this.queued.push(...answers)
  }

  reset() {
    this.requests.length = 0
    this.queued = []
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const type = String(req.headers['content-type'] ?? '')
      const recorded: RecordedRequest = {
        method: req.method ?? '', path: req.url ?? '', headers: req.headers, body,
        ...(type.includes('json') ? { json: JSON.parse(body || 'null') } : {}),
        ...(type.includes('x-www-form-urlencoded') ? { form: querystring.parse(body) as Record<string, string | string[]> } : {})
      }
      this.requests.push(recorded)
      const answer = this.queued.shift() ?? this.answer(recorded, ++this.served, this)
      setTimeout(() => {
        res.writeHead(answer.status, { 'Content-Type': 'application/json', ...answer.headers })
        res.end(JSON.stringify(answer.body))
      }, answer.delayMs ?? 0)
    })
  }
}

const graphRefusal = (code: number, type: string, message: string) => ({ status: 400, body: { error: { message, type, code, fbtrace_id: 'AbCdEfGhIjK' } } })

/**
 * The connect-time check: GET /{id}?fields=... or /{page-id}/subscribed_apps with a Bearer token
 * and appsecret_proof. A granted id answers only to its token and app secret, as Graph does.
 */
function graphObject(request: RecordedRequest, provider: FakeProvider): Answer {
  const url = new URL(request.path, 'http://graph')
  const [, , id, edge] = url.pathname.split('/')
  const token = String(request.headers.authorization ?? '').replace(/^Bearer /, '')
  const owner = provider.grants.get(id)
  if (owner) {
    const known = [...provider.grants.values()].some((grant) => grant.token === token)
    if (!known) return graphRefusal(190, 'OAuthException', 'Invalid OAuth access token - Cannot parse access token')
    if (owner.token !== token) {
      return graphRefusal(100, 'GraphMethodException', `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`)
    }
    if (url.searchParams.get('appsecret_proof') !== crypto.createHmac('sha256', owner.appSecret).update(token).digest('hex')) {
      return graphRefusal(100, 'GraphMethodException', 'Invalid appsecret_proof provided in the API argument')
    }
  }
  if (edge === 'subscribed_apps') return { status: 200, body: { data: [{ name: 'CRM', id: '1234567890', subscribed_fields: ['messages'] }] } }
  return { status: 200, body: { id, display_phone_number: '+1 555-078-3881', username: 'acme.shop' } }
}

/** The Graph API's answers: a user profile; WhatsApp {messaging_product, contacts, messages:[{id}]}, Messenger/Instagram {recipient_id, message_id}. */
export const fakeGraph = () =>
  new FakeProvider((request, count, provider) => {
    if (request.method === 'GET' && request.path.includes('appsecret_proof=')) return graphObject(request, provider)
    // The User Profile API (Messenger: first_name, last_name; Instagram: name, username).
    if (request.method === 'GET') return { status: 200, body: { id: request.path.split(/[/?]/)[2], first_name: 'Peter', last_name: 'Chang', name: 'Peter Chang', username: 'peter.chang' } }
    if (request.json?.messaging_product === 'whatsapp') {
      return { status: 200, body: { messaging_product: 'whatsapp', contacts: [{ input: request.json.to, wa_id: request.json.to }], messages: [{ id: `wamid.TEST${count}` }] } }
    }
    return { status: 200, body: { recipient_id: request.json?.recipient?.id, message_id: `m_TEST${count}` } }
  }).start()

/**
 * Twilio's IncomingPhoneNumbers list (the connect-time check), filtered by PhoneNumber, with HTTP
 * Basic AccountSid:AuthToken. A granted number is only in its account; an account the double
 * does not know is refused 401, as Twilio refuses credentials it does not accept.
 */
function twilioNumbers(request: RecordedRequest, provider: FakeProvider): Answer {
  const url = new URL(request.path, 'http://twilio')
  const sid = url.pathname.split('/')[3]
  const number = url.searchParams.get('PhoneNumber') ?? ''
  const [user, token] = Buffer.from(String(request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString('utf8').split(':')
  const grants = [...provider.grants.entries()]
  const owner = provider.grants.get(number)
  if (owner && !grants.some(([, grant]) => grant.sid === user && grant.token === token && user === sid)) {
    return { status: 401, body: { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 } }
  }
  const listed = !owner || owner.sid === sid
  return {
    status: 200,
    body: {
      incoming_phone_numbers: listed ? [{ sid: `PN${'0'.repeat(32)}`, account_sid: sid, phone_number: number, friendly_name: number }] : [],
      page: 0, page_size: 50, uri: request.path
    }
  }
}

/** Twilio's Message resource answer: {sid, status: 'queued', ...}. */
export const fakeTwilio = () =>
  new FakeProvider((request, count, provider) => {
    if (request.method === 'GET') return twilioNumbers(request, provider)
    return { status: 201, body: { sid: `SM${String(count).padStart(32, '0')}`, status: 'queued', to: request.form?.To, from: request.form?.From, body: request.form?.Body } }
  }).start()

/** X-Hub-Signature-256 of a body, as Meta computes it. */
export const metaSignature = (body: string | Buffer, secret: string) => `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`

/**
 * X-Twilio-Signature as Twilio documents it (computed here independently of the twilio package
 * the service uses): base64 HMAC-SHA1 of the URL followed by each parameter name and value, sorted by name.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>) {
  const data = Object.keys(params).sort().reduce((text, key) => text + key + params[key], url)
  return crypto.createHmac('sha1', authToken).update(Buffer.from(data, 'utf8')).digest('base64')
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits until the outbox has run every due job of this app's topics (webhook requests stored,
 * messages delivered), running them here as well; jobs waiting for a later retry are left alone.
 */
export async function settle(t: TestApp, organizationId: number) {
  for (let i = 0; i < 300; i++) {
    await t.app.get('outbox').deliverDue()
    const [{ due }] = await t.db('outbox_jobs')
      .where({ organization_id: organizationId })
      .whereIn('topic', ['channel-inbound', 'channel-message'])
      .where((q) => q.where('status', 'running').orWhere((p) => p.where('status', 'pending').where('next_attempt_at', '<=', t.db.fn.now())))
      .count({ due: '*' })
    if (Number(due) === 0) return
    await sleep(10)
  }
  throw new Error('the outbox did not settle')
}
