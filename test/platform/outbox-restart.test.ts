import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FakeProvider, metaSignature } from '../channels/fakes.js'
import { metaJson, whatsappText } from '../channels/payloads.js'
import { eventually, freePort, run, waitForHealth } from '../helpers/process.js'
import type { Spawned } from '../helpers/process.js'

const MESSAGES = 20
const SEND_MS = 250
const APP_SECRET = 'restart-app-secret'

const started: Spawned[] = []
const dirs: string[] = []
afterAll(() => {
  for (const spawned of started) spawned.kill()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** The Graph API, slow to send: each message takes SEND_MS; the connect-time check answers at once. */
const slowGraph = () =>
  new FakeProvider((request, count) => {
    if (request.method === 'GET') return { status: 200, body: { id: request.path.split(/[/?]/)[2] } }
    return { status: 200, body: { messaging_product: 'whatsapp', contacts: [], messages: [{ id: `wamid.RESTART${count}` }] }, delayMs: SEND_MS }
  }).start()

/** The API of a spawned server: JSON in and out, with the organization's key once there is one. */
const api = (port: number, key?: string) => async (method: string, route: string, body?: unknown) => {
  const response = await fetch(`http://127.0.0.1:${port}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const answer = await response.json().catch(() => null)
  if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(answer)}`)
  return answer
}

/** A new user and organization through the API; answers the organization's API key. */
async function organizationKey(port: number): Promise<string> {
  const call = api(port)
  const email = `restart-${crypto.randomUUID().slice(0, 8)}@example.test`
  await call('POST', '/users', { email, password: 'correct horse battery', first_name: 'Re', last_name: 'Start' })
  const { accessToken } = await call('POST', '/authentication', { strategy: 'local', email, password: 'correct horse battery' })
  const bearer = async (method: string, route: string, body: unknown) => {
    const response = await fetch(`http://127.0.0.1:${port}${route}`, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` }, body: JSON.stringify(body) })
    return response.json()
  }
  const organization = await bearer('POST', '/organizations', { name: 'Restart Co' })
  const { key } = await bearer('POST', '/api-keys', { organization_id: organization.id, name: 'restart' })
  return key
}

/**
 * A process killed (kill -9) in the middle of a slow send must not hold the job, and every later
 * message of the conversation behind it, for a whole lease. The process started next
 * takes the dead worker's job over at once: the conversation's queue drains in seconds, in order,
 * with at most the one message that was in flight sent twice.
 */
describe('when the server is killed while it sends a conversation\'s messages', () => {
  it('when it is killed -9 during a slow send and started again, then every queued message of the conversation is sent within 15 s of the new start, in order, at most one twice', async () => {
    const graph = await slowGraph()
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-restart-'))
    dirs.push(dataDir)
    const env = {
      LOG_LEVEL: 'warn', npm_config_update_notifier: 'false', DATA_DIR: dataDir, META_GRAPH_URL: `${graph.url}/v21.0`,
      PUBLIC_URL: 'https://crm.example.test', OUTBOX_POLL_INTERVAL_MS: '5000', ...(process.env.DATABASE_URL ? {} : { DATABASE_URL: '' })
    }
    const start = async () => {
      const port = await freePort()
      const server = run('npm', ['start'], { ...env, PORT: String(port) })
      started.push(server)
      const ready = await Promise.race([waitForHealth(port, 90_000).then(() => true), server.exited.then(() => false)])
      expect(ready, server.output().stderr).toBe(true)
      return { port, server }
    }
    try {
      const first = await start()
      const key = await organizationKey(first.port)
      const call = api(first.port, key)
      const phoneNumberId = String(Date.now()).slice(-12)
      const account = await call('POST', '/channel-accounts', {
        channel: 'whatsapp', name: 'Restart line', config: { phone_number_id: phoneNumberId }, credentials: { access_token: 'EAAG-restart', app_secret: APP_SECRET }
      })
      // The customer writes first: the 24-hour window opens and the conversation exists.
      const body = metaJson(whatsappText(phoneNumberId, { waId: '16505550199' }, `wamid.${crypto.randomUUID()}`, 'Where is my order?'))
      const hook = await fetch(`http://127.0.0.1:${first.port}${new URL(account.webhook_url).pathname}`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': metaSignature(body, APP_SECRET) }, body
      })
      expect(hook.status).toBe(200)
      let conversationId = 0
      expect(await eventually(async () => {
        conversationId = (await call('GET', '/conversations?channel=whatsapp')).data[0]?.id ?? 0
        return conversationId > 0
      }, 10_000)).toBe(true)

      const texts = Array.from({ length: MESSAGES }, (_, i) => `Message ${String(i + 1).padStart(2, '0')}`)
      for (const content of texts) await call('POST', '/conversation-messages-transform-outgoing-whatsapp', { conversation_id: conversationId, content })
      // Killed while the third send waits for its answer.
      expect(await eventually(() => graph.requests.filter((r) => r.method === 'POST').length >= 3, 20_000)).toBe(true)
      first.server.kill()
      await first.server.exited

      // Counted from the moment the new process serves: its build and boot depend on the machine.
      const second = await start()
      const restartedAt = Date.now()
      const messages = async () => (await api(second.port, key)('GET', `/conversation-messages-whatsapp?conversation_id=${conversationId}&direction=outbound&$limit=50`)).data
      const allSent = await eventually(async () => (await messages()).filter((m: any) => m.status === 'sent').length === MESSAGES, 15_000 - (Date.now() - restartedAt))
      const elapsed = Date.now() - restartedAt
      expect(allSent, JSON.stringify((await messages()).map((m: any) => [m.content, m.status]))).toBe(true)
      expect(elapsed).toBeLessThan(15_000)

      const sent = graph.requests.filter((r) => r.method === 'POST').map((r) => r.json.text.body as string)
      const once = sent.filter((text, i) => text !== sent[i - 1])
      expect(once, JSON.stringify(sent)).toEqual(texts)
      expect(sent.length - once.length).toBeLessThanOrEqual(1)
    } finally {
      await graph.stop()
    }
  }, 240_000)
})
