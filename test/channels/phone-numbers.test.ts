import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { created } from '../conversations/fixtures.js'
import { TWILIO_TOKEN, connectSms, connectWhatsApp, pathOf, uniqueMobileDigits } from './fixtures.js'
import { fakeGraph, fakeTwilio, settle, twilioSignature } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { twilioIncoming } from './payloads.js'

// A contact's number as typed is read in its region (libphonenumber-js): SMS and WhatsApp send to
// its E.164 form, and a sender writing from that number is that contact.
describe('phone numbers on SMS and WhatsApp', () => {
  let t: TestApp
  let twilio: FakeProvider
  let graph: FakeProvider
  let acme: Tenant
  let globex: Tenant
  let sms: any
  let whatsapp: any

  beforeAll(async () => {
    twilio = await fakeTwilio()
    graph = await fakeGraph()
    t = await startApp({ twilioApiUrl: twilio.url, metaGraphUrl: `${graph.url}/v21.0`, publicUrl: 'https://crm.example.test', messageRetryBaseMs: 0 })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    sms = await connectSms(t, acme)
    whatsapp = await connectWhatsApp(t, acme)
  })
  afterAll(async () => {
    await t.close()
    await twilio.stop()
    await graph.stop()
  })
  beforeEach(() => {
    twilio.reset()
    graph.reset()
  })

  const createContact = async (tenant: Tenant, fields: Record<string, unknown>) =>
    created(await t.http().post('/contacts').set(tenant.key).send({ first_name: 'Ada', ...fields }), 'contact')
  const contactsOf = (tenant: Tenant) => t.db('contacts').where({ organization_id: tenant.organization.id }).whereNull('deleted_at').orderBy('id')
  /** A text from `from` to the SMS account, as Twilio posts it, processed. */
  const textFrom = async (from: string, body: string) => {
    const params = twilioIncoming(sms.config.account_sid, from, sms.config.from_number, `SM${crypto.randomUUID().replace(/-/g, '')}`, body)
    const res = await t.http().post(pathOf(sms.webhook_url)).type('form')
      .set('X-Twilio-Signature', twilioSignature(TWILIO_TOKEN, sms.webhook_url, params)).send(new URLSearchParams(params).toString())
    expect(res.status, res.text).toBe(200)
    await settle(t, acme.organization.id)
  }
  const conversationOf = async (contactId: number, channel: string) =>
    t.db('conversations').where({ organization_id: acme.organization.id, contact_id: contactId, channel }).first()

  it('when a UK contact is saved as 020 7946 0958 in GB and the team texts them, then it stores +442079460958 and Twilio is asked to send to +442079460958', async () => {
    const contact = await createContact(acme, { last_name: 'Texted', phone: '020 7946 0958', phone_country_code: '+44', phone_country_iso: 'GB' })
    expect(contact).toMatchObject({ phone: '020 7946 0958', phone_e164: '+442079460958' })
    expect((await t.db('contacts').where({ organization_id: acme.organization.id, id: contact.id }).first()).phone_e164).toBe('+442079460958')
    const conversation = created(await t.http().post('/conversations').set(acme.key)
      .send({ channel: 'sms', contact_id: contact.id, channel_account_id: sms.id }), 'conversation')
    const sent = await t.http().post('/conversation-messages-sms').set(acme.key).send({ conversation_id: conversation.id, content: 'Your order shipped' })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    await settle(t, acme.organization.id)
    expect(twilio.requests).toHaveLength(1)
    expect(twilio.requests[0].form).toMatchObject({ To: '+442079460958', From: sms.config.from_number, Body: 'Your order shipped' })
  })

  it('when a contact saved nationally gets a WhatsApp template, then Meta is asked to send to its E.164 digits', async () => {
    const contact = await createContact(acme, { last_name: 'WhatsApp', phone: '07123 456789', phone_country_iso: 'GB' })
    const conversation = created(await t.http().post('/conversations').set(acme.key)
      .send({ channel: 'whatsapp', contact_id: contact.id, channel_account_id: whatsapp.id }), 'conversation')
    const template = { name: 'order_update', language: 'en_GB', components: [] }
    const sent = await t.http().post('/conversation-messages-transform-outgoing-whatsapp').set(acme.key).send({ conversation_id: conversation.id, template })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    await settle(t, acme.organization.id)
    expect(graph.requests.at(-1)!.json).toMatchObject({ messaging_product: 'whatsapp', to: '447123456789', type: 'template' })
  })

  it('when a contact saved as 07946 095812 texts from +447946095812, then the message joins that contact and no other contact is made', async () => {
    const contact = await createContact(acme, { last_name: 'Mobile', phone: '07946 095812', phone_country_iso: 'GB' })
    const before = (await contactsOf(acme)).length
    await textFrom('+447946095812', 'Is my parcel on its way?')
    expect((await contactsOf(acme)).length).toBe(before)
    const conversation = await conversationOf(contact.id, 'sms')
    expect(conversation).toMatchObject({ channel: 'sms', channel_account_id: sms.id })
  })

  it("when a new sender texts, then their contact has the number's E.164 form and country, and phone search finds it written nationally", async () => {
    const digits = uniqueMobileDigits()
    const from = `+44${digits}`
    await textFrom(from, 'Hello there')
    const contact = (await contactsOf(acme)).find((row: any) => row.phone === from)
    expect(contact).toMatchObject({ phone: from, phone_e164: from, phone_country_code: '+44', phone_country_iso: 'GB' })
    const national = `0${digits.slice(0, 4)} ${digits.slice(4)}`
    const found = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'search')
      .send({ searchIn: 'phone', searchTerm: national, phone_country_code: '+44', phone_country_iso: 'GB' })
    expect(found.status, JSON.stringify(found.body)).toBe(200)
    expect(found.body.data.map((row: any) => row.id)).toEqual([contact.id])
  })

  it("when another organization holds a contact with the sender's number, then the sender never joins it", async () => {
    const theirs = await createContact(globex, { last_name: 'Elsewhere', phone: '020 7946 0123', phone_country_iso: 'GB' })
    await textFrom('+442079460123', 'Hi from a stranger')
    const mine = (await contactsOf(acme)).filter((row: any) => row.phone_e164 === '+442079460123')
    expect(mine).toHaveLength(1)
    expect(mine[0].id).not.toBe(theirs.id)
    expect(await t.db('conversations').where({ organization_id: globex.organization.id, contact_id: theirs.id }).first()).toBeUndefined()
  })
})
