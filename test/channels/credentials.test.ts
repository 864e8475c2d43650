import fs from 'node:fs'
import crypto from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { reencryptUnboundCredentials } from '../../src/services/inbox/channels/accounts.js'
import { channelSecretsKey, decryptSecret, encryptSecret, warnIfKeyDerived } from '../../src/services/inbox/channels/secrets.js'
import type { Application } from '../../src/declarations.js'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { connectWhatsApp, pathOf, uniqueDigits } from './fixtures.js'
import { fakeGraph, metaSignature, settle } from './fakes.js'
import type { FakeProvider } from './fakes.js'
import { metaJson, whatsappText } from './payloads.js'

/** Credentials as they were written before they were bound to their account: "v1", AES-256-GCM without associated data. */
function unboundV1(key: Buffer, plain: Record<string, string>) {
  const nonce = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce)
  const sealed = Buffer.concat([cipher.update(JSON.stringify(plain), 'utf8'), cipher.final()])
  return ['v1', nonce, cipher.getAuthTag(), sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
}

describe('channel credentials at rest are bound to their account', () => {
  let t: TestApp
  let graph: FakeProvider
  let acme: Tenant
  let globex: Tenant

  beforeAll(async () => {
    graph = await fakeGraph()
    t = await startApp({ metaGraphUrl: `${graph.url}/v21.0`, messageRetryBaseMs: 0 })
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
  })
  afterAll(async () => {
    await t.close()
    await graph.stop()
  })
  beforeEach(() => graph.reset())

  const credentialsOf = (label: string) => ({ access_token: `EAAG-token-of-${label}`, app_secret: `secret-of-${label}` })
  const webhook = (account: any, secret: string, waId = `1${uniqueDigits(11)}`) => {
    const body = metaJson(whatsappText(account.config.phone_number_id, { waId }, `wamid.${uniqueDigits()}`, 'Hello'))
    return t.http().post(pathOf(account.webhook_url)).set('Content-Type', 'application/json').set('X-Hub-Signature-256', metaSignature(body, secret)).send(body)
  }

  it('when credentials are decrypted with the id of another account, then decryption throws; with their own id, they open', () => {
    const key = channelSecretsKey(t.app)
    const sealed = encryptSecret(key, { access_token: 'EAAG-bound' }, 41)
    expect(decryptSecret(key, sealed, 41)).toEqual({ access_token: 'EAAG-bound' })
    expect(() => decryptSecret(key, sealed, 42)).toThrow()
  })

  it("when one account's credentials ciphertext is copied onto another account's row, then that account cannot use them: its webhooks are 401 and its messages fail with credentials_unreadable; the first account is unaffected", async () => {
    const first = await connectWhatsApp(t, acme, { credentials: credentialsOf('first') })
    const second = await connectWhatsApp(t, globex, { credentials: credentialsOf('second') })
    const waId = `1${uniqueDigits(11)}`
    expect((await webhook(second, 'secret-of-second', waId)).status).toBe(200)
    await settle(t, globex.organization.id)
    const conversation = await t.db('conversations').where({ organization_id: globex.organization.id, channel_account_id: second.id }).first()

    const { credentials } = await t.db('channel_accounts').where({ id: first.id }).first()
    await t.db('channel_accounts').where({ id: second.id }).update({ credentials })

    const signedWithFirst = await webhook(second, 'secret-of-first')
    expect(signedWithFirst.status).toBe(401)
    expect(signedWithFirst.body).toMatchObject({ name: 'NotAuthenticated', code: 401 })

    const sent = await t.http().post('/conversation-messages-transform-outgoing-whatsapp').set(globex.key).send({ conversation_id: conversation.id, content: 'Are you there?' })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    await settle(t, globex.organization.id)
    const message = (await t.http().get(`/conversation-messages-whatsapp/${sent.body.id}`).set(globex.key)).body
    expect(message).toMatchObject({ status: 'failed', provider_message_id: null, error: { code: 'credentials_unreadable' } })
    expect(graph.requests.filter((request) => request.method === 'POST')).toHaveLength(0)

    expect((await webhook(first, 'secret-of-first')).status).toBe(200)
    expect((await t.http().get(`/channel-accounts/${first.id}`).set(acme.key)).body.has_credentials).toBe(true)

    // Entered again, the second account's credentials work.
    const patched = await t.http().patch(`/channel-accounts/${second.id}`).set(globex.key).send({ credentials: credentialsOf('second') })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body.has_credentials).toBe(true)
    expect((await webhook(second, 'secret-of-second')).status).toBe(200)
  })

  it('when only the config of an account with unreadable credentials is changed, then 400 errors.credentials asks for them again', async () => {
    const first = await connectWhatsApp(t, acme)
    const second = await connectWhatsApp(t, acme)
    const { credentials } = await t.db('channel_accounts').where({ id: first.id }).first()
    await t.db('channel_accounts').where({ id: second.id }).update({ credentials })
    const res = await t.http().patch(`/channel-accounts/${second.id}`).set(acme.key).send({ config: { phone_number_id: uniqueDigits() } })
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ credentials: 'cannot be read: send them again' })
  })

  it('when an account still holds unbound v1 credentials at start-up, then they are re-encrypted bound to it and keep working; a v1 text is never decrypted as such', async () => {
    const account = await connectWhatsApp(t, acme)
    const key = channelSecretsKey(t.app)
    const v1 = unboundV1(key, credentialsOf('legacy'))
    await t.db('channel_accounts').where({ id: account.id }).update({ credentials: v1 })
    expect(() => decryptSecret(key, v1, account.id)).toThrow()

    await reencryptUnboundCredentials(t.app)
    const row = await t.db('channel_accounts').where({ id: account.id }).first()
    expect(row.credentials).toMatch(/^v2\./)
    expect(decryptSecret(key, row.credentials, account.id)).toEqual(credentialsOf('legacy'))
    expect((await webhook(account, 'secret-of-legacy')).status).toBe(200)
  })
})

describe('the start-up warning of a key derived from AUTH_SECRET', () => {
  /** The warnings warnIfKeyDerived logs with these settings. */
  const warningsWith = (settings: Record<string, unknown>) => {
    const warnings: string[] = []
    const logger = { warn: (message: string) => warnings.push(message) }
    warnIfKeyDerived({ get: (name: string) => (name === 'logger' ? logger : settings[name]) } as unknown as Application)
    return warnings
  }

  it('when CHANNEL_SECRETS_KEY_WARNING is on (as config/production.json sets it) and no key is set, then one warning names CHANNEL_SECRETS_KEY', () => {
    expect(JSON.parse(fs.readFileSync('config/production.json', 'utf8')).channelSecretsKeyWarning).toBe(true)
    const warnings = warningsWith({ channelSecretsKeyWarning: true, channelSecretsKey: '' })
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^CHANNEL_SECRETS_KEY is not set/)
  })

  it('when a key is set, or the warning is off, then nothing is logged', () => {
    expect(warningsWith({ channelSecretsKeyWarning: true, channelSecretsKey: crypto.randomBytes(32).toString('base64') })).toEqual([])
    expect(warningsWith({ channelSecretsKeyWarning: false, channelSecretsKey: '' })).toEqual([])
  })
})
