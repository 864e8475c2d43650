import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { serveSockets } from '../helpers/sockets.js'
import { created } from '../conversations/fixtures.js'
import { connectSms, connectWebchat } from './fixtures.js'
import { fakeTwilio } from './fakes.js'
import type { FakeProvider } from './fakes.js'

/** What the site's back end computes for a signed-in user: hex HMAC-SHA256 of the user id under the widget's identity secret. */
const userHashOf = (secret: string, userId: string) => crypto.createHmac('sha256', secret).update(userId).digest('hex')

/** Who a visitor is: an e-mail typed in the widget is a claim; only the site's signature of a user id is proof. */
describe('web chat identity', () => {
  let t: TestApp
  let sockets: Awaited<ReturnType<typeof serveSockets>>
  let acme: Tenant
  let globex: Tenant
  let widget: any
  let twilio: FakeProvider

  beforeAll(async () => {
    twilio = await fakeTwilio()
    t = await startApp({ publicRateLimitPoints: 1000, twilioApiUrl: twilio.url })
    sockets = await serveSockets(t)
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    widget = await connectWebchat(t, acme)
  })
  afterAll(async () => {
    await sockets.close()
    await t.close()
    await twilio.stop()
  })

  const openSession = (body: Record<string, unknown>, site = widget) => t.http().post(`/public/webchat/${site.widget_token}/sessions`).send(body)
  const open = async (body: Record<string, unknown>, site = widget) => created(await openSession(body, site), 'session') as { visitor_token: string; conversation_id: number }
  const say = (token: string, content: string) => t.http().post('/public/webchat/messages').set('X-Visitor-Token', token).send({ content })
  const thread = async (token: string) => {
    const res = await t.http().get('/public/webchat/messages').set('X-Visitor-Token', token)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body.data.map((m: any) => m.content)
  }
  const reply = (tenant: Tenant, conversationId: number, content: string) =>
    t.http().post('/conversation-messages-transform-outgoing-webchat').set(tenant.key).send({ conversation_id: conversationId, content }).expect(201)
  const conversationOf = async (id: number) => (await t.http().get(`/conversations/${id}`).set(acme.key)).body
  const teamView = async (conversationId: number) =>
    (await t.http().get('/conversation-messages-webchat').set(acme.key).query({ conversation_id: conversationId })).body.data.map((m: any) => m.content).sort()
  /** A customer the team knows, with a web-chat thread on the widget that holds the team's private answers. */
  async function customerWithThread(email: string) {
    const customer = created(await t.http().post('/contacts').set(acme.key).send({ first_name: 'Ada', last_name: 'Lovelace', email }), 'contact')
    const conversation = created(await t.http().post('/conversations').set(acme.key).send({ channel: 'webchat', contact_id: customer.id, channel_account_id: widget.id }), 'conversation')
    await reply(acme, conversation.id, 'Your order 4711 ships to 12 Crescent Road')
    return { customer, conversation }
  }

  it("when a stranger opens the chat with a customer's e-mail, then they get a contact and conversation of their own: nothing of the customer's thread, none of its live replies, and their words stay in their own thread", async () => {
    const email = `ada-${crypto.randomUUID().slice(0, 8)}@example.test`
    const { customer, conversation } = await customerWithThread(email)

    const stranger = await open({ name: 'Ada Lovelace', email: email.toUpperCase() })
    expect(stranger.conversation_id).not.toBe(conversation.id)
    expect(await thread(stranger.visitor_token)).toEqual([])
    const { received } = await sockets.listen({ visitorToken: stranger.visitor_token })
    await reply(acme, conversation.id, 'Your new card ends in 4242')
    expect((await say(stranger.visitor_token, 'Please send it to my new address instead')).status).toBe(201)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(received.map((r) => r.data.content)).toEqual(['Please send it to my new address instead'])

    expect(await teamView(conversation.id)).toEqual(['Your new card ends in 4242', 'Your order 4711 ships to 12 Crescent Road'])
    expect(await teamView(stranger.conversation_id)).toEqual(['Please send it to my new address instead'])
    const claimed = (await conversationOf(stranger.conversation_id)).contact
    expect(claimed).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace', email })
    expect(claimed.id).not.toBe(customer.id)
    expect((await t.http().get(`/contacts/${customer.id}`).set(acme.key)).body).toMatchObject({ email, deleted_at: null })
  })

  it("when the team merges the visitor's contact into the customer's, then the thread becomes the customer's and the visitor's old token no longer opens it nor keeps its socket (within 5 s)", async () => {
    const email = `grace-${crypto.randomUUID().slice(0, 8)}@example.test`
    const { customer } = await customerWithThread(email)
    const visitor = await open({ name: 'Grace', email })
    const visitorContact = (await conversationOf(visitor.conversation_id)).contact
    const listening = await sockets.listen({ visitorToken: visitor.visitor_token })

    const duplicates = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'find-duplicates').send({ searchIn: 'email' })
    expect(duplicates.body.groups).toContainEqual({ value: email, count: 2, contact_ids: [customer.id, visitorContact.id] })
    const merged = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'merge').send({ primary_id: customer.id, duplicate_ids: [visitorContact.id] })
    expect(merged.status, JSON.stringify(merged.body)).toBe(200)

    expect((await conversationOf(visitor.conversation_id)).contact_id).toBe(customer.id)
    expect((await t.http().get('/public/webchat/messages').set('X-Visitor-Token', visitor.visitor_token)).status).toBe(401)
    expect((await say(visitor.visitor_token, 'still me?')).status).toBe(401)
    await Promise.race([listening.cutOff, new Promise((_resolve, reject) => setTimeout(() => reject(new Error('the socket of the merged visitor is still open')), 5_000))])
  })

  it("when the site signs the user id with the widget's identity secret, then every session of that user joins their contact and thread; the contact known by that id is the one with that external_id", async () => {
    const site = await connectWebchat(t, acme)
    expect(site.identity_secret).toMatch(/^[\w-]{43}$/)
    const read = (await t.http().get(`/channel-accounts/${site.id}`).set(acme.key)).body
    expect(read).not.toHaveProperty('identity_secret')
    expect(read).toMatchObject({ has_credentials: true })

    const userId = `user-${crypto.randomUUID()}`
    const first = await open({ user_id: userId, user_hash: userHashOf(site.identity_secret, userId), name: 'Signed In', email: 'signed.in@example.test' }, site)
    expect((await say(first.visitor_token, 'Where is my parcel?')).status).toBe(201)
    const again = await open({ user_id: userId, user_hash: userHashOf(site.identity_secret, userId).toUpperCase() }, site)
    expect(again.conversation_id).toBe(first.conversation_id)
    expect(await thread(again.visitor_token)).toEqual(['Where is my parcel?'])
    const contactId = (await conversationOf(first.conversation_id)).contact_id
    expect((await t.http().get(`/contacts/${contactId}`).set(acme.key)).body).toMatchObject({ external_id: userId, first_name: 'Signed', last_name: 'In', email: 'signed.in@example.test' })

    const known = created(await t.http().post('/contacts').set(acme.key).send({ first_name: 'Known', external_id: 'crm-42' }), 'contact')
    const elsewhere = created(await t.http().post('/contacts').set(globex.key).send({ first_name: 'Other tenant', external_id: 'crm-42' }), 'contact')
    const session = await open({ user_id: 'crm-42', user_hash: userHashOf(site.identity_secret, 'crm-42') }, site)
    expect((await conversationOf(session.conversation_id)).contact_id).toBe(known.id)
    const otherTenant = (await t.http().get('/conversations').set(globex.key).query({ contact_id: elsewhere.id })).body
    expect(otherTenant.total).toBe(0)
  })

  it("when the team merges a signed user's contact into an older one and keeps the signed contact's identity, then the user's next session joins the merged contact and the same thread", async () => {
    const site = await connectWebchat(t, acme)
    const userId = `merged-${crypto.randomUUID()}`
    const signed = { user_id: userId, user_hash: userHashOf(site.identity_secret, userId), name: 'Signed Later' }
    const first = await open(signed, site)
    await say(first.visitor_token, 'Hello from the shop')
    const older = created(await t.http().post('/contacts').set(acme.key).send({ first_name: 'Known', last_name: 'Before' }), 'contact')
    const signedContact = (await conversationOf(first.conversation_id)).contact_id
    const merged = await t.http().post('/contacts').set(acme.key).set('X-Service-Method', 'merge').send({ primary_id: older.id, duplicate_ids: [signedContact], keep_identity_from: signedContact })
    expect(merged.body).toMatchObject({ id: older.id, external_id: userId })

    const next = await open(signed, site)
    expect(next.conversation_id).toBe(first.conversation_id)
    expect((await conversationOf(next.conversation_id)).contact_id).toBe(older.id)
    expect(await thread(next.visitor_token)).toEqual(['Hello from the shop'])
  })

  it('when a signed session brings a wrong or missing hash, then it is refused and nothing is created', async () => {
    const site = await connectWebchat(t, acme)
    const other = await connectWebchat(t, globex)
    const contacts = async () => Number((await t.db('contacts').where({ organization_id: acme.organization.id }).count({ n: '*' }))[0].n)
    const before = await contacts()
    const victim = 'crm-victim'
    const refused = [
      [{ user_id: victim, user_hash: userHashOf(site.identity_secret, 'someone-else') }, 401],
      [{ user_id: victim, user_hash: userHashOf(other.identity_secret, victim) }, 401],
      [{ user_id: victim, user_hash: 'a'.repeat(64) }, 401],
      [{ user_id: victim, user_hash: 'not hex' }, 400],
      [{ user_id: victim }, 400],
      [{ user_hash: userHashOf(site.identity_secret, victim) }, 400]
    ] as const
    for (const [body, status] of refused) {
      const res = await openSession(body, site)
      expect(res.status, JSON.stringify(body)).toBe(status)
    }
    expect((await openSession({ user_id: victim }, site)).body.errors).toHaveProperty('user_hash')
    expect((await openSession({ user_id: victim, user_hash: 'a'.repeat(64) }, site)).body).toMatchObject({ name: 'NotAuthenticated', message: 'Invalid user_hash' })
    expect(await contacts()).toBe(before)
  })

  it('when an owner rotates the identity secret, then hashes made with the old one are refused and the new one signs; members and other channels cannot rotate', async () => {
    const site = await connectWebchat(t, acme)
    const userId = 'rotating-user'
    const rotated = await t.http().patch(`/channel-accounts/${site.id}`).set(acme.key).send({ rotate_identity_secret: true })
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200)
    expect(rotated.body.identity_secret).toMatch(/^[\w-]{43}$/)
    expect(rotated.body.identity_secret).not.toBe(site.identity_secret)
    expect((await openSession({ user_id: userId, user_hash: userHashOf(site.identity_secret, userId) }, site)).status).toBe(401)
    expect((await openSession({ user_id: userId, user_hash: userHashOf(rotated.body.identity_secret, userId) }, site)).status).toBe(201)
    expect((await t.http().get(`/channel-accounts/${site.id}`).set(acme.key)).body).not.toHaveProperty('identity_secret')

    const member = await addMember(t, acme, 'member')
    expect((await t.http().patch(`/channel-accounts/${site.id}`).set(member.bearer).send({ rotate_identity_secret: true })).status).toBe(403)
    const sms = await connectSms(t, acme)
    const refused = await t.http().patch(`/channel-accounts/${sms.id}`).set(acme.key).send({ rotate_identity_secret: true })
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toHaveProperty('rotate_identity_secret')
    expect((await t.http().patch(`/channel-accounts/${site.id}`).set(globex.key).send({ rotate_identity_secret: true })).status).toBe(404)
  })

  it('when a widget has no identity secret yet, then a signed session is a 400 until an owner rotates one in', async () => {
    const site = await connectWebchat(t, acme)
    await t.db('channel_accounts').where({ id: site.id }).update({ credentials: null })
    const res = await openSession({ user_id: 'u-1', user_hash: userHashOf(site.identity_secret, 'u-1') }, site)
    expect(res.status).toBe(400)
    expect(res.body.errors).toHaveProperty('user_id')
    const rotated = (await t.http().patch(`/channel-accounts/${site.id}`).set(acme.key).send({ rotate_identity_secret: true })).body
    expect((await openSession({ user_id: 'u-1', user_hash: userHashOf(rotated.identity_secret, 'u-1') }, site)).status).toBe(201)
  })
})
