import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, createContact } from '../conversations/fixtures.js'
import { META_SECRET, TWILIO_TOKEN, connectSms, connectWebchat, connectWhatsApp, uniqueDigits } from './fixtures.js'

describe('channel accounts', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  beforeAll(async () => {
    t = await startApp({ publicUrl: 'https://crm.example.test' })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    await t.close()
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
    expect(row.credentials).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/)
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

  it('when a second account has the same phone_number_id, in this or another organization, then 409 naming config.phone_number_id', async () => {
    const first = await connectWhatsApp(t, acme)
    const again = { channel: 'whatsapp', name: 'Copy', config: { phone_number_id: first.config.phone_number_id }, credentials: { access_token: 'a', app_secret: 'b' } }
    for (const tenant of [acme, globex]) {
      const res = await t.http().post('/channel-accounts').set(tenant.key).send(again)
      expect(res.status, JSON.stringify(res.body)).toBe(409)
      expect(res.body.errors).toEqual({ 'config.phone_number_id': 'is already connected to another channel account' })
    }
    const sms = await connectSms(t, acme)
    const copy = await t.http().post('/channel-accounts').set(globex.key).send({ channel: 'sms', name: 'Copy', config: sms.config, credentials: { auth_token: 'x' } })
    expect(copy.status).toBe(409)
    expect(copy.body.errors).toEqual({ 'config.from_number': 'is already connected to another channel account' })
    // Once the first is deleted, the number may be connected again.
    expect((await t.http().delete(`/channel-accounts/${first.id}`).set(acme.key)).status).toBe(200)
    expect((await t.http().post('/channel-accounts').set(globex.key).send(again)).status).toBe(201)
  })

  it('when a web chat widget is connected, then it has a widget_token, no webhook_url and takes no credentials', async () => {
    const widget = await connectWebchat(t, acme, { allowed_origins: ['https://shop.example.test'] })
    expect(widget).toMatchObject({ channel: 'webchat', webhook_url: null, has_credentials: false, config: { title: 'Chat with us', allowed_origins: ['https://shop.example.test'] } })
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
