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
  /** Every request since the start (not reset): the ids the double hands out stay unique. */
  private served = 0
  private queued: Answer[] = []
  private server = http.createServer((req, res) => this.handle(req, res))
  url = ''

  constructor(private answer: (request: RecordedRequest, count: number) => Answer) {}

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
      const answer = this.queued.shift() ?? this.answer(recorded, ++this.served)
      setTimeout(() => {
        res.writeHead(answer.status, { 'Content-Type': 'application/json', ...answer.headers })
        res.end(JSON.stringify(answer.body))
      }, answer.delayMs ?? 0)
    })
  }
}

/** The Graph API's answers: a user profile; WhatsApp {messaging_product, contacts, messages:[{id}]}, Messenger/Instagram {recipient_id, message_id}. */
export const fakeGraph = () =>
  new FakeProvider((request, count) => {
    // The User Profile API (Messenger: first_name, last_name; Instagram: name, username).
    if (request.method === 'GET') return { status: 200, body: { id: request.path.split(/[/?]/)[2], first_name: 'Peter', last_name: 'Chang', name: 'Peter Chang', username: 'peter.chang' } }
    if (request.json?.messaging_product === 'whatsapp') {
      return { status: 200, body: { messaging_product: 'whatsapp', contacts: [{ input: request.json.to, wa_id: request.json.to }], messages: [{ id: `wamid.TEST${count}` }] } }
    }
    return { status: 200, body: { recipient_id: request.json?.recipient?.id, message_id: `m_TEST${count}` } }
  }).start()

/** Twilio's Message resource answer: {sid, status: 'queued', ...}. */
export const fakeTwilio = () =>
  new FakeProvider((request, count) => ({
    status: 201,
    body: { sid: `SM${String(count).padStart(32, '0')}`, status: 'queued', to: request.form?.To, from: request.form?.From, body: request.form?.Body }
  })).start()

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
