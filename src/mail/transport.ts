import { createRequire } from 'node:module'
import type { Transporter } from 'nodemailer'

// nodemailer loads only when an SMTP server is configured: otherwise its memory would sit idle.
const require = createRequire(import.meta.url)

export interface MailEnvelope {
  from: string
  to: string
  subject: string
  text: string
  html?: string
}

/** Sends one message; resolves with the server's message id or rejects when the server refuses it. */
export interface MailTransport {
  send(mail: MailEnvelope): Promise<{ messageId: string }>
  close(): void
}

// A mail server that accepts the connection and then hangs must not hold a claimed message for
// long: these bound one attempt well inside the worker's claim lease.
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/** An SMTP transport (nodemailer) for SMTP_URL, e.g. smtp://user:pass@mail.example:587 or smtps://... */
export function smtpTransport(smtpUrl: string): MailTransport {
  const nodemailer = require('nodemailer') as typeof import('nodemailer')
  const transporter: Transporter = nodemailer.createTransport({ url: smtpUrl, ...TIMEOUTS })
  return {
    async send(mail) {
      const info = await transporter.sendMail(mail)
      return { messageId: String(info.messageId ?? '') }
    },
    close: () => transporter.close()
  }
}
