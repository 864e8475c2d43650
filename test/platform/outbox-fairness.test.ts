import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SMTPServer } from 'smtp-server'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { created } from '../conversations/fixtures.js'
import { TWILIO_TOKEN, connectSms, pathOf, uniqueE164 } from '../channels/fixtures.js'
import { fakeTwilio, settle, twilioSignature } from '../channels/fakes.js'
import type { FakeProvider } from '../channels/fakes.js'
import { twilioIncoming } from '../channels/payloads.js'
import { startReceiver } from '../webhooks/receiver.js'
import type { Receiver } from '../webhooks/receiver.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const WEBHOOK_TIMEOUT_MS = 3000
// More than a topic's slots (OUTBOX_CONCURRENCY, 8): only the per-organization share leaves room for others.
const TARPIT_SUBSCRIPTIONS = 10

/** A webhook receiver that accepts every connection and never answers: each attempt lasts the whole time limit. */
async function startTarpit() {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    connections: () => sockets.size,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    })
  }
}

/** An SMTP server on loopback that keeps the recipients of every message it accepts. */
async function startMailbox() {
  const recipients: string[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData: (stream, session, callback) => {
      stream.on('end', () => {
        recipients.push(...session.envelope.rcptTo.map((rcpt) => rcpt.address))
        callback()
      })
      stream.resume()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    recipients,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** Milliseconds from `since` until `arrived` holds (checked every 5 ms), or Infinity after 15 s. */
async function latency(since: number, arrived: () => boolean) {
  while (!arrived()) {
    if (Date.now() - since > 15_000) return Infinity
    await sleep(5)
  }
  return Date.now() - since
}

describe("the outbox when one organization's webhook receiver never answers", () => {
  let t: TestApp
  let twilio: FakeProvider
  let receiver: Receiver
  let tarpit: Awaited<ReturnType<typeof startTarpit>>
  let mailbox: Awaited<ReturnType<typeof startMailbox>>
  let slow: Tenant
  let calm: Tenant
  let conversationId: number

  beforeAll(async () => {
    ;[twilio, receiver, tarpit, mailbox] = await Promise.all([fakeTwilio(), startReceiver(), startTarpit(), startMailbox()])
    t = await startApp({
      twilioApiUrl: twilio.url,
      publicUrl: 'https://crm.example.test',
      smtpUrl: mailbox.url,
      // Mail is found by the poll (no commit kicks it): a short one, so only a held worker delays it.
      outboxPollIntervalMs: 100,
      webhookAllowPrivate: true,
      webhookTimeoutMs: WEBHOOK_TIMEOUT_MS,
      // The tarpit's failed attempts are not retried while the test runs.
      webhookRetryBaseMs: 600_000
    })
    ;[slow, calm] = await Promise.all([createTenant(t, 'Slow'), createTenant(t, 'Calm')])
    // The calm organization: an SMS conversation (the customer wrote first) and a subscription.
    const account = await connectSms(t, calm)
    const from = uniqueE164()
    const params = twilioIncoming(account.config.account_sid, from, account.config.from_number, `SM${Date.now()}`, 'Hello')
    const incoming = await t.http().post(pathOf(account.webhook_url)).type('form')
      .set('X-Twilio-Signature', twilioSignature(TWILIO_TOKEN, account.webhook_url, params)).send(new URLSearchParams(params).toString())
    expect(incoming.status, incoming.text).toBe(200)
    await settle(t, calm.organization.id)
    conversationId = (await t.db('conversations').where({ organization_id: calm.organization.id }).first('id')).id
    created(await t.http().post('/webhook-subscriptions').set(calm.key).send({ url: receiver.url(), events: ['contacts.created'] }), 'calm subscription')
  })
  afterAll(async () => {
    await tarpit?.close()
    await t?.close()
    await Promise.all([twilio?.stop(), receiver?.close(), mailbox?.close()])
  })

  it("when its deliveries hang, then another organization's webhook, invitation e-mail and channel message each arrive within a second", async () => {
    for (let i = 0; i < TARPIT_SUBSCRIPTIONS; i++) {
      created(await t.http().post('/webhook-subscriptions').set(slow.key).send({ url: tarpit.url, events: ['*'] }), 'tarpit subscription')
    }
    for (let i = 0; i < 3; i++) created(await t.http().post('/contacts').set(slow.key).send({ first_name: `Slow ${i}` }), 'slow contact')
    for (let i = 0; i < 200 && tarpit.connections() === 0; i++) await sleep(10)
    expect(tarpit.connections()).toBeGreaterThan(0)

    // All three at once, each timed from its answer (its job committed) until its double has it.
    const email = uniqueEmail('calm-invitee')
    const timed = async (write: () => Promise<unknown>, arrived: () => boolean) => {
      await write()
      return latency(Date.now(), arrived)
    }
    const [webhook, mail, message] = await Promise.all([
      timed(async () => created(await t.http().post('/contacts').set(calm.key).send({ first_name: 'Calm' }), 'calm contact'), () => receiver.received.length > 0),
      timed(async () => created(await t.http().post('/organizations-users-invites').set(calm.key).send({ email, role: 'member' }), 'invitation'), () => mailbox.recipients.includes(email)),
      timed(
        async () => created(await t.http().post('/conversation-messages-sms').set(calm.key).send({ conversation_id: conversationId, content: 'On our way' }), 'sms'),
        () => twilio.requests.some((request) => request.method === 'POST')
      )
    ])
    const latencies = `webhook ${webhook} ms, mail ${mail} ms, message ${message} ms`
    expect(Math.max(webhook, mail, message), latencies).toBeLessThan(1000)
  }, 60_000)
})
