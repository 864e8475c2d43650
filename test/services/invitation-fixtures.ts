import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll } from 'vitest'
import { SMTPServer } from 'smtp-server'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const APP_URL = 'https://app.crm.example'
export const INVITES = '/organizations-users-invites'
export const INVALID_TOKEN = 'The invitation token is invalid, has already been used or has expired'

interface ReceivedMail {
  to: string[]
  raw: string
}

/** A real SMTP server on loopback that keeps every message it accepts. */
export class Mailbox {
  received: ReceivedMail[] = []
  port = 0
  private server: SMTPServer | undefined

  async start(port = 0) {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = []
        stream.on('data', (chunk: Buffer) => chunks.push(chunk))
        stream.on('end', () => {
          this.received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: decodeQuotedPrintable(Buffer.concat(chunks).toString('utf8')) })
          callback()
        })
      }
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', () => resolve()))
    this.port = (this.server.server.address() as AddressInfo).port
  }

  async stop() {
    await new Promise<void>((resolve) => this.server!.close(() => resolve()))
  }

  to(address: string) {
    return this.received.filter((mail) => mail.to.includes(address))
  }
}

const decodeQuotedPrintable = (raw: string) =>
  raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)))

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface InvitationWorld {
  t: TestApp
  acme: Tenant
  globex: Tenant
  mailbox: Mailbox
}

/**
 * The set-up of the invitation tests: a real SMTP server on loopback, and an app that sends its
 * mail there with links to APP_URL, with Acme and Globex; `ready` receives them once they exist.
 * The helpers invite, accept and read the outbox as the tests do.
 */
export function useInvitationApp(ready: (world: InvitationWorld) => void) {
  const mailbox = new Mailbox()
  const world = { mailbox } as InvitationWorld
  beforeAll(async () => {
    await mailbox.start()
  })
  afterAll(async () => {
    await mailbox.stop()
  })
  useApp({
    tenants: ['Acme', 'Globex'],
    config: () => ({
      smtpUrl: `smtp://127.0.0.1:${mailbox.port}`,
      mailFrom: 'Acme CRM <crm@acme.example>',
      appUrl: APP_URL,
      inviteLinkPath: '/join?invitation={token}',
      mailRetryBaseMs: 1000
    })
  }, (app) => {
    world.t = app.t
    ;[world.acme, world.globex] = app.tenants
    ready(world)
  })

  // The worker's start-up pass runs after the app is set up: on a slow database it could claim the
  // first test's mail, which these tests deliver themselves.
  beforeAll(async () => {
    await world.t.app.get('outbox').settled()
  })

  const worker = () => world.t.app.get('outbox')
  const invite = (tenant: Tenant, body: Record<string, unknown>, headers = tenant.key) =>
    world.t.http().post(INVITES).set(headers).send({ role: 'member', ...body })
  const accept = (id: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    world.t.http().patch(`${INVITES}/${id}`).set(headers).send({ status: 'accepted', ...body })
  // Invitation mails only: sign-ups of these addresses get a verification mail of their own.
  const outboxFor = (email: string) => world.t.db('mail_outbox').where({ recipient: email, kind: 'invitation' }).orderBy('id')
  return { worker, invite, accept, outboxFor }
}
