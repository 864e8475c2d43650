import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { META_SECRET, TWILIO_TOKEN, connectSms, connectWhatsApp, pathOf, uniqueDigits, uniqueE164 } from './fixtures.js'
import { fakeGraph, fakeTwilio, metaSignature, settle, twilioSignature } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { metaJson, twilioIncoming, whatsappButtonReply, whatsappText } from './payloads.js'

/**
 * A correctly signed webhook whose text Postgres cannot store must neither be lost to a retry
 * loop nor hold back the account's later messages: the retries here are as slow as in production.
 */
describe('inbound messages that cannot be stored as they came', () => {
  let t: TestApp
  let graph: FakeProvider
  let twilio: FakeProvider
  let acme: Tenant
  let whatsapp: any
  let sms: any

  beforeAll(async () => {
    graph = await fakeGraph()
    twilio = await fakeTwilio()
    t = await startApp({ metaGraphUrl: `${graph.url}/v21.0`, twilioApiUrl: twilio.url, publicUrl: 'https://crm.example.test', messageRetryBaseMs: 60_000, messageMaxAttempts: 8 })
    acme = await createTenant(t, 'Acme')
    whatsapp = await connectWhatsApp(t, acme)
    sms = await connectSms(t, acme)
  })
  afterAll(async () => {
    await t.close()
    await graph.stop()
    await twilio.stop()
  })

  const postMeta = async (payload: unknown) => {
    const body = metaJson(payload)
    const res = await t.http().post(pathOf(whatsapp.webhook_url)).set('Content-Type', 'application/json').set('X-Hub-Signature-256', metaSignature(body, META_SECRET)).send(body)
    expect(res.status, res.text).toBe(200)
  }
  const messagesOfWaId = async (waId: string) => {
    const contact = await t.db('contacts').where({ organization_id: acme.organization.id, channel_whatsapp_wa_id: waId }).first()
    if (!contact) return { contact, messages: [] }
    const messages = await t.db('conversation_messages').where({ organization_id: acme.organization.id, channel_account_id: whatsapp.id })
      .whereIn('conversation_id', t.db('conversations').select('id').where({ organization_id: acme.organization.id, contact_id: contact.id })).orderBy('id')
    return { contact, messages }
  }
  const inboundJobs = (accountId: number) => t.db('outbox_jobs').where({ topic: 'channel-inbound', organization_id: acme.organization.id }).whereRaw("(payload->>'account_id')::int = ?", [accountId]).orderBy('id')

  it('when a signed WhatsApp message carries U+0000 and lone surrogates in its text, its sender name and a reply title, then it is stored with NUL removed and each lone surrogate replaced by U+FFFD', async () => {
    const waId = `1${uniqueDigits(11)}`
    await postMeta(whatsappText(whatsapp.config.phone_number_id, { waId, name: 'Zo\u0000ë Mül\udc00ler' }, `wamid.${uniqueDigits()}`, 'Hel\u0000lo \ud83d there \udc00!'))
    const reply = whatsappButtonReply(whatsapp.config.phone_number_id, waId, `wamid.${uniqueDigits()}`) as any
    reply.entry[0].changes[0].value.messages[0].interactive.button_reply.title = 'Yes\u0000 \ud800please'
    await postMeta(reply)
    await settle(t, acme.organization.id)
    const { contact, messages } = await messagesOfWaId(waId)
    expect(contact).toMatchObject({ first_name: 'Zoë', last_name: 'Mül\ufffdler' })
    expect(messages.map((m: any) => m.content)).toEqual(['Hello \ufffd there \ufffd!', 'Yes \ufffdplease'])
    expect(messages[1].metadata.interactive).toMatchObject({ title: 'Yes \ufffdplease' })
    expect((await inboundJobs(whatsapp.id)).slice(-2).map((job: any) => job.status)).toEqual(['received', 'received'])
  })

  it('when a signed Twilio SMS carries U+0000 in its body, then it is stored without it', async () => {
    const from = uniqueE164()
    const params = twilioIncoming(sms.config.account_sid, from, sms.config.from_number, `SM${crypto.randomUUID().replace(/-/g, '')}`, 'Mo\u0000ve it to Friday')
    const res = await t.http().post(pathOf(sms.webhook_url)).type('form').set('X-Twilio-Signature', twilioSignature(TWILIO_TOKEN, sms.webhook_url, params)).send(new URLSearchParams(params).toString())
    expect(res.status, res.text).toBe(200)
    await settle(t, acme.organization.id)
    const contact = await t.db('contacts').where({ organization_id: acme.organization.id, phone: from }).first()
    const message = await t.db('conversation_messages').where({ organization_id: acme.organization.id, channel_account_id: sms.id })
      .whereIn('conversation_id', t.db('conversations').select('id').where({ organization_id: acme.organization.id, contact_id: contact.id })).first()
    expect(message.content).toBe('Move it to Friday')
  })

  it("when storing one message fails for a reason no retry can fix, then its job is failed at once with the error, and the account's next message is stored right after instead of waiting behind it", async () => {
    const poison = `poison-${crypto.randomUUID()}`
    const constraint = `test_refuses_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`
    // A check violation on the stored message stands for any data the database refuses.
    await t.db.raw(`ALTER TABLE conversation_messages ADD CONSTRAINT ${constraint} CHECK (content <> '${poison}') NOT VALID`)
    try {
      const waId = `1${uniqueDigits(11)}`
      await postMeta(whatsappText(whatsapp.config.phone_number_id, { waId }, `wamid.${uniqueDigits()}`, poison))
      await postMeta(whatsappText(whatsapp.config.phone_number_id, { waId }, `wamid.${uniqueDigits()}`, 'The one after'))
      await settle(t, acme.organization.id)
      const { messages } = await messagesOfWaId(waId)
      expect(messages.map((m: any) => m.content)).toEqual(['The one after'])
      const [refused, after] = (await inboundJobs(whatsapp.id)).slice(-2)
      expect(refused).toMatchObject({ status: 'failed', attempts: 1, result: { permanent: true, code: '23514' } })
      expect(refused.last_error).toContain(constraint)
      expect(refused.done_at).toBeInstanceOf(Date)
      expect(after).toMatchObject({ status: 'received', attempts: 1 })
    } finally {
      await t.db.raw(`ALTER TABLE conversation_messages DROP CONSTRAINT IF EXISTS ${constraint}`)
    }
  })
})
