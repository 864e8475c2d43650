import crypto from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, createContact, created } from '../conversations/fixtures.js'
import { META_SECRET, TWILIO_TOKEN, connectSms, connectWebchat, connectWhatsApp, twilioSid, uniqueDigits, uniqueE164 } from './fixtures.js'
import { fakeGraph, fakeTwilio } from './fakes.js'
import type { FakeProvider } from './fakes.js'

describe('channel accounts', () => {
  let t: TestApp
  let graph: FakeProvider
  let twilio: FakeProvider
  let acme: Tenant
  let globex: Tenant

  beforeAll(async () => {
    graph = await fakeGraph()
    twilio = await fakeTwilio()
    t = await startApp({ publicUrl: 'https://crm.example.test', metaGraphUrl: `${graph.url}/v21.0`, twilioApiUrl: twilio.url })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    await t.close()
    await graph.stop()
    await twilio.stop()
  })

  it('when a WhatsApp number is connected, then 201 with webhook_url, verify_token and has_credentials, and never a credential', async () => {
    const phoneNumberId = uniqueDigits()
    const res = await t.http().post('/channel-accounts').set(acme.key).send({
      channel: 'whatsapp', name: 'Support', config: { phone_number_id: phoneNumberId },
      credentials: { access_token: 'EAAG-secret-access-token', app_secret: 'the-app-secret' }
    })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number), organization_id: acme.organization.id, channel: 'whatsapp', name: 'Support', is_active: true,
      config: { phone_number_id: phoneNumberId },
      webhook_url: expect.stringMatching(/^https:\/\/crm\.example\.test\/webhooks\/whatsapp\/[A-Za-z0-9_-]{43}$/),
      verify_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), widget_token: null, has_credentials: true,
      created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
    })
    const text = JSON.stringify([res.body, (await t.http().get(`/channel-accounts/${res.body.id}`).set(acme.key)).body,
      (await t.http().get('/channel-accounts').set(acme.key)).body])
    expect(text).not.toContain('EAAG-secret-access-token')
    expect(text).not.toContain('the-app-secret')
  })

  it('when credentials are stored, then the database holds them encrypted only (no plain text in any column)', async () => {
    const account = await connectWhatsApp(t, acme, { credentials: { access_token: 'EAAG-plain-text-probe', app_secret: 'app-secret-probe' } })
    const row = await t.db('channel_accounts').where({ id: account.id }).first()
    const dump = JSON.stringify(row)
    expect(dump).not.toContain('EAAG-plain-text-probe')
    expect(dump).not.toContain('app-secret-probe')
    expect(row.credentials).toMatch(/^v2\.[\w-]+\.[\w-]+\.[\w-]+$/)
    const everywhere = await t.db.raw("SELECT count(*)::int AS n FROM channel_accounts c WHERE c::text LIKE '%plain-text-probe%'")
    expect(everywhere.rows[0].n).toBe(0)
  })

  it('when credentials are patched, then has_credentials stays true, the stored ciphertext changes and nothing is answered', async () => {
    const account = await connectWhatsApp(t, acme)
    const before = await t.db('channel_accounts').where({ id: account.id }).first()
    const res = await t.http().patch(`/channel-accounts/${account.id}`).set(acme.key).send({ credentials: { access_token: 'EAAG-rotated', app_secret: META_SECRET } })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(JSON.stringify(res.body)).not.toContain('EAAG-rotated')
    expect(res.body.has_credentials).toBe(true)
    const after = await t.db('channel_accounts').where({ id: account.id }).first()
    expect(after.credentials).not.toBe(before.credentials)
  })

  it('when a provider channel comes without credentials, then 400 errors.credentials; with a bad config, then 400 naming config.field', async () => {
    const missing = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'sms', name: 'x', config: { account_sid: `AC${'a'.repeat(32)}`, from_number: '+14155550100' } })
    expect(missing.status).toBe(400)
    expect(Object.keys(missing.body.errors)).toEqual(['credentials'])
    const bad = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'sms', name: 'x', config: { account_sid: 'nope', from_number: '555' }, credentials: { auth_token: TWILIO_TOKEN } })
    expect(bad.status).toBe(400)
    expect(Object.keys(bad.body.errors).sort()).toEqual(['config.account_sid', 'config.from_number'])
    const extra = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'messenger', name: 'x', config: { page_id: '1' }, credentials: { page_access_token: 'a' } })
    expect(extra.status).toBe(400)
    expect(extra.body.errors).toHaveProperty('credentials.app_secret')
  })

  it('when a second account has the same phone_number_id with credentials the provider accepts for it, in this or another organization, then 409 naming config.phone_number_id', async () => {
    const owner = { token: 'EAAG-token-of-the-number', appSecret: 'secret-of-the-app' }
    const first = await connectWhatsApp(t, acme, { credentials: { access_token: owner.token, app_secret: owner.appSecret } })
    graph.grant(first.config.phone_number_id, owner)
    const again = { channel: 'whatsapp', name: 'Copy', config: { phone_number_id: first.config.phone_number_id }, credentials: { access_token: owner.token, app_secret: owner.appSecret } }
    for (const tenant of [acme, globex]) {
      const res = await t.http().post('/channel-accounts').set(tenant.key).send(again)
      expect(res.status, JSON.stringify(res.body)).toBe(409)
      expect(res.body.errors).toEqual({ 'config.phone_number_id': 'is already connected to another channel account' })
    }
    const sms = await connectSms(t, acme)
    twilio.grant(sms.config.from_number, { sid: sms.config.account_sid, token: TWILIO_TOKEN })
    const copy = await t.http().post('/channel-accounts').set(globex.key).send({ channel: 'sms', name: 'Copy', config: sms.config, credentials: { auth_token: TWILIO_TOKEN } })
    expect(copy.status).toBe(409)
    expect(copy.body.errors).toEqual({ 'config.from_number': 'is already connected to another channel account' })
    // Once the first is deleted, the number may be connected again.
    expect((await t.http().delete(`/channel-accounts/${first.id}`).set(acme.key)).status).toBe(200)
    expect((await t.http().post('/channel-accounts').set(globex.key).send(again)).status).toBe(201)
  })

  describe('provider ids are claimed only with credentials the provider accepts', () => {
    const junk = { whatsapp: { access_token: 'EAAG-junk', app_secret: 'junk' }, messenger: { page_access_token: 'EAAG-junk', app_secret: 'junk' }, sms: { auth_token: 'junk' } }
    /** Acme connects an account whose id the double grants to Acme's credentials only. */
    async function ownedByAcme(channel: 'whatsapp' | 'messenger' | 'sms') {
      const owner = { token: `EAAG-owner-${uniqueDigits()}`, appSecret: `secret-${uniqueDigits()}` }
      if (channel === 'sms') {
        const config = { account_sid: twilioSid(), from_number: uniqueE164() }
        twilio.grant(config.from_number, { sid: config.account_sid, token: owner.token })
        return created(await t.http().post('/channel-accounts').set(acme.key).send({ channel, name: 'Acme line', config, credentials: { auth_token: owner.token } }), channel)
      }
      const config = channel === 'whatsapp' ? { phone_number_id: uniqueDigits() } : { page_id: uniqueDigits() }
      graph.grant(Object.values(config)[0], owner)
      const credentials = channel === 'whatsapp' ? { access_token: owner.token, app_secret: owner.appSecret } : { page_access_token: owner.token, app_secret: owner.appSecret }
      return created(await t.http().post('/channel-accounts').set(acme.key).send({ channel, name: 'Acme line', config, credentials }), channel)
    }

    it.each(['whatsapp', 'messenger', 'sms'] as const)("when another organization connects Acme's %s id with credentials the provider refuses, then 400 on credentials that names no one, the same as for an id nobody connected, and Acme's account is untouched", async (channel) => {
      const account = await ownedByAcme(channel)
      const stored = await t.db('channel_accounts').where({ id: account.id }).first()
      const squat = await t.http().post('/channel-accounts').set(globex.key).send({ channel, name: 'Squatter', config: account.config, credentials: junk[channel] })
      expect(squat.status, JSON.stringify(squat.body)).toBe(400)
      expect(Object.keys(squat.body.errors)).toEqual(['credentials'])
      // The status code aside, which an id such as 40 is part of.
      const { code: _code, ...said } = squat.body
      const text = JSON.stringify(said)
      for (const revealing of [acme.organization.name, 'Acme', 'already', 'connected', String(account.id)]) expect(text).not.toContain(revealing)
      // An id nobody connected, owned elsewhere, is refused in the same words (its own id aside).
      const stranger = await ownedByAcme(channel)
      await t.http().delete(`/channel-accounts/${stranger.id}`).set(acme.key)
      const unconnected = await t.http().post('/channel-accounts').set(globex.key).send({ channel, name: 'Squatter', config: stranger.config, credentials: junk[channel] })
      expect(unconnected.status).toBe(400)
      const withoutIds = (body: any) => JSON.stringify(body).replaceAll(Object.values(stranger.config).at(-1) as string, 'ID').replaceAll(Object.values(account.config).at(-1) as string, 'ID')
      expect(withoutIds(unconnected.body)).toBe(withoutIds(squat.body))
      expect(await t.db('channel_accounts').where({ organization_id: globex.organization.id, name: 'Squatter' })).toHaveLength(0)
      expect(await t.db('channel_accounts').where({ id: account.id }).first()).toEqual(stored)
      expect((await t.http().get(`/channel-accounts/${account.id}`).set(acme.key)).body).toMatchObject({ is_active: true, has_credentials: true, config: account.config })
    })

    it('when an account is connected, then the provider was asked with its credentials in the documented form: Graph GET with Bearer token and appsecret_proof, Twilio IncomingPhoneNumbers with Basic auth', async () => {
      graph.reset()
      twilio.reset()
      const whatsapp = await connectWhatsApp(t, acme)
      const messenger = created(await t.http().post('/channel-accounts').set(acme.key).send({
        channel: 'messenger', name: 'Page', config: { page_id: uniqueDigits() }, credentials: { page_access_token: 'EAAG-page-token', app_secret: META_SECRET }
      }), 'messenger')
      const sms = await connectSms(t, acme)
      const proof = (token: string) => crypto.createHmac('sha256', META_SECRET).update(token).digest('hex')
      expect(graph.requests.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
        ['GET', `/v21.0/${whatsapp.config.phone_number_id}?fields=id,display_phone_number&appsecret_proof=${proof('EAAG-whatsapp-access-token')}`, 'Bearer EAAG-whatsapp-access-token'],
        ['GET', `/v21.0/${messenger.config.page_id}/subscribed_apps?appsecret_proof=${proof('EAAG-page-token')}`, 'Bearer EAAG-page-token']
      ])
      const basic = `Basic ${Buffer.from(`${sms.config.account_sid}:${TWILIO_TOKEN}`).toString('base64')}`
      expect(twilio.requests.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
        ['GET', `/2010-04-01/Accounts/${sms.config.account_sid}/IncomingPhoneNumbers.json?PhoneNumber=${encodeURIComponent(sms.config.from_number)}`, basic]
      ])
    })

    it("when valid Twilio credentials name a number that is not in their account, then 400 on config.from_number; when Meta's app secret does not match the token, then 400 on credentials", async () => {
      const acmeLine = await ownedByAcme('sms')
      const globexAccount = { sid: twilioSid(), token: 'globex-auth-token' }
      twilio.grant(uniqueE164(), globexAccount)
      const res = await t.http().post('/channel-accounts').set(globex.key).send({
        channel: 'sms', name: 'Not ours', config: { account_sid: globexAccount.sid, from_number: acmeLine.config.from_number }, credentials: { auth_token: globexAccount.token }
      })
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body.errors).toEqual({ 'config.from_number': 'is not a number of this Twilio account' })
      const owner = { token: `EAAG-${uniqueDigits()}`, appSecret: 'the-real-secret' }
      const phoneNumberId = uniqueDigits()
      graph.grant(phoneNumberId, owner)
      const wrongSecret = await t.http().post('/channel-accounts').set(globex.key).send({
        channel: 'whatsapp', name: 'x', config: { phone_number_id: phoneNumberId }, credentials: { access_token: owner.token, app_secret: 'a-wrong-secret' }
      })
      expect(wrongSecret.status).toBe(400)
      expect(wrongSecret.body.errors.credentials).toMatch(/^were not accepted by Meta for this account: Invalid appsecret_proof/)
    })

    it('when the config of an account is changed to an id its stored credentials do not own, then 400 and nothing changes; to an id they own, then 200', async () => {
      const account = await ownedByAcme('whatsapp')
      const foreign = await ownedByAcme('whatsapp')
      const moved = await t.http().patch(`/channel-accounts/${account.id}`).set(acme.key).send({ config: { phone_number_id: foreign.config.phone_number_id } })
      expect(moved.status, JSON.stringify(moved.body)).toBe(400)
      expect(Object.keys(moved.body.errors)).toEqual(['credentials'])
      expect((await t.http().get(`/channel-accounts/${account.id}`).set(acme.key)).body.config).toEqual(account.config)
      const free = uniqueDigits()
      const renamed = await t.http().patch(`/channel-accounts/${account.id}`).set(acme.key).send({ config: { phone_number_id: free, display_phone_number: '+1 555 0199' } })
      expect(renamed.status, JSON.stringify(renamed.body)).toBe(200)
      expect((await t.http().get(`/channel-accounts/${account.id}`).set(acme.key)).body.config).toEqual({ phone_number_id: free, display_phone_number: '+1 555 0199' })
    })

    it('when the provider answers 5xx, then 503 saying which provider answered a temporary error, without its words, and nothing is stored', async () => {
      graph.queue({ status: 503, body: { error: { message: 'Service temporarily unavailable', code: 2 } } })
      const phoneNumberId = uniqueDigits()
      const res = await t.http().post('/channel-accounts').set(acme.key).send({
        channel: 'whatsapp', name: 'Later', config: { phone_number_id: phoneNumberId }, credentials: { access_token: 'EAAG-x', app_secret: 'y' }
      })
      expect(res.status).toBe(503)
      expect(res.body).toEqual({ name: 'Unavailable', code: 503, className: 'unavailable', message: "Meta's Graph API answered with a temporary error: try again shortly; nothing was stored" })
      expect(await t.db('channel_accounts').where({ provider_id: phoneNumberId })).toHaveLength(0)
    })

    it('when the provider cannot be reached, then 503 naming its API and the setting to check, with no raw error, and nothing is stored', async () => {
      const closed = await startApp({ metaGraphUrl: 'http://127.0.0.1:1/v21.0', twilioApiUrl: 'http://127.0.0.1:1' })
      try {
        const tenant = await createTenant(closed, 'Offline')
        const attempts: [Record<string, unknown>, string][] = [
          [{ channel: 'whatsapp', name: 'Line', config: { phone_number_id: uniqueDigits() }, credentials: { access_token: 'EAAG-x', app_secret: 'y' } }, "Meta's Graph API could not be reached at META_GRAPH_URL"],
          [{ channel: 'sms', name: 'Texts', config: { account_sid: twilioSid(), from_number: uniqueE164() }, credentials: { auth_token: TWILIO_TOKEN } }, "Twilio's REST API could not be reached at TWILIO_API_URL"]
        ]
        for (const [body, start] of attempts) {
          const res = await closed.http().post('/channel-accounts').set(tenant.key).send(body)
          expect(res.status, JSON.stringify(res.body)).toBe(503)
          expect(res.body.message).toBe(`${start}: check the setting and the network, then try again; nothing was stored`)
          expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack/)
        }
        expect(await closed.db('channel_accounts').where({ organization_id: tenant.organization.id })).toHaveLength(0)
      } finally {
        await closed.close()
      }
    })
  })

  it('when a web chat widget is connected, then it has a widget_token, its identity secret (the only credential, made by the server), no webhook_url, and takes no credentials', async () => {
    const widget = await connectWebchat(t, acme, { allowed_origins: ['https://shop.example.test'] })
    expect(widget).toMatchObject({ channel: 'webchat', webhook_url: null, has_credentials: true, config: { title: 'Chat with us', allowed_origins: ['https://shop.example.test'] } })
    expect(widget.identity_secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(widget.widget_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const withSecret = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'webchat', name: 'w', config: {}, credentials: { token: 'x' } })
    expect(withSecret.status).toBe(400)
    expect(withSecret.body.errors).toHaveProperty('credentials')
    const badOrigin = await t.http().post('/channel-accounts').set(acme.key).send({ channel: 'webchat', name: 'w', config: { allowed_origins: ['https://shop.example.test/path'] } })
    expect(badOrigin.status).toBe(400)
  })

  it('when an account is deactivated and renamed, then the change is read back', async () => {
    const account = await connectSms(t, acme)
    const res = await t.http().patch(`/channel-accounts/${account.id}`).set(acme.key).send({ is_active: false, name: 'Paused number' })
    expect(res.status).toBe(200)
    expect((await t.http().get(`/channel-accounts/${account.id}`).set(acme.key)).body).toMatchObject({ is_active: false, name: 'Paused number', has_credentials: true })
    const listed = await t.http().get('/channel-accounts').set(acme.key).query({ channel: 'sms', is_active: false })
    expect(listed.body.data.map((a: any) => a.id)).toContain(account.id)
  })

  it('when a member (not owner or admin) creates, changes or deletes an account, then 403; members read', async () => {
    const account = await connectWebchat(t, acme)
    const member = await addMember(t, acme, 'member')
    const memberKey = await keyFor(t, acme, member.user.id)
    expect((await t.http().post('/channel-accounts').set(memberKey).send({ channel: 'webchat', name: 'w', config: {} })).status).toBe(403)
    expect((await t.http().patch(`/channel-accounts/${account.id}`).set(memberKey).send({ name: 'x' })).status).toBe(403)
    expect((await t.http().delete(`/channel-accounts/${account.id}`).set(memberKey)).status).toBe(403)
    expect((await t.http().get(`/channel-accounts/${account.id}`).set(memberKey)).status).toBe(200)
    const admin = await addMember(t, acme, 'admin')
    expect((await t.http().patch(`/channel-accounts/${account.id}`).set(admin.bearer).send({ name: 'By admin' })).status).toBe(200)
  })

  it('when the OpenAPI document is read, then it lists the channel accounts, the webhooks and the web-chat routes', async () => {
    const { paths } = (await t.http().get('/openapi.json')).body
    expect(paths['/channel-accounts'].post).toBeDefined()
    expect(paths['/channel-accounts/{id}'].patch).toBeDefined()
    for (const channel of ['whatsapp', 'messenger', 'instagram']) expect(Object.keys(paths[`/webhooks/${channel}/{key}`]).sort()).toEqual(['get', 'post'])
    expect(paths['/webhooks/sms/{key}'].post).toBeDefined()
    expect(paths['/webhooks/sms/{key}/status'].post).toBeDefined()
    expect(paths['/public/webchat/{widgetToken}/sessions'].post).toBeDefined()
    expect(Object.keys(paths['/public/webchat/messages']).sort()).toEqual(['get', 'post'])
  })

  describe('across organizations', () => {
    it("when another organization's account is read, changed or deleted by id, then 404", async () => {
      const foreign = await connectWebchat(t, globex)
      expect((await t.http().get(`/channel-accounts/${foreign.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().patch(`/channel-accounts/${foreign.id}`).set(acme.key).send({ name: 'x' })).status).toBe(404)
      expect((await t.http().delete(`/channel-accounts/${foreign.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(`/channel-accounts/${foreign.id}`).set(globex.key)).body.name).toBe('Site widget')
    })

    it('when another organization is named by organization_id, then 403', async () => {
      expect((await t.http().get('/channel-accounts').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
      const res = await t.http().post('/channel-accounts').set(acme.key).send({ organization_id: globex.organization.id, channel: 'webchat', name: 'w', config: {} })
      expect(res.status).toBe(403)
    })

    it("when a conversation references another organization's channel account, then 400 errors.channel_account_id", async () => {
      const foreign = await connectWhatsApp(t, globex)
      const contact = await createContact(t, acme)
      const res = await t.http().post('/conversations').set(acme.key).send({ channel: 'whatsapp', contact_id: contact.id, channel_account_id: foreign.id })
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ channel_account_id: 'must be a channel account of this organization' })
    })

    it("when a conversation's channel differs from its account's, then 400 errors.channel_account_id; a matching one opens", async () => {
      const own = await connectWhatsApp(t, acme)
      const contact = await createContact(t, acme)
      const wrong = await t.http().post('/conversations').set(acme.key).send({ channel: 'sms', contact_id: contact.id, channel_account_id: own.id })
      expect(wrong.status).toBe(400)
      expect(wrong.body.errors).toEqual({ channel_account_id: 'is a whatsapp account: open a whatsapp conversation with it' })
      const right = await t.http().post('/conversations').set(acme.key).send({ channel: 'whatsapp', contact_id: contact.id, channel_account_id: own.id })
      expect(right.status, JSON.stringify(right.body)).toBe(201)
      expect(right.body.channel_account_id).toBe(own.id)
    })
  })
})
