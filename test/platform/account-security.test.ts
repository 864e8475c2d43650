import crypto from 'node:crypto'
import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, signUp, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { FORBIDDEN_MESSAGE } from '../../src/hooks/tenant-scope.js'
import { useApp } from '../helpers/use-app.js'

const APP_URL = 'https://app.crm.example'
const INVITES = '/organizations-users-invites'
const FORBIDDEN = { name: 'Forbidden', message: FORBIDDEN_MESSAGE, code: 403, className: 'forbidden' }
const INVALID_VERIFICATION = 'The verification token is invalid, has already been used or has expired'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const jwtPayload = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'))
const sha256 = (value: string) => crypto.createHash('sha256').update(value).digest('hex')

/** Account hardening: API-key limits, session revocation, hashed invitation tokens, e-mail verification, e-mail case. */
describe('account security', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'], config: { appUrl: APP_URL } }, (app) => ({ t, tenants: [acme, globex] } = app))

  const login = (email: string, password: string) => t.http().post('/authentication').send({ strategy: 'local', email, password })
  const bearerOf = (token: string) => ({ Authorization: `Bearer ${token}` })
  const invite = (headers: Record<string, string>, body: Record<string, unknown>) =>
    t.http().post(INVITES).set(headers).send({ role: 'member', ...body })
  const accept = (id: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.http().patch(`${INVITES}/${id}`).set(headers).send({ status: 'accepted', ...body })
  const verificationMails = (email: string) =>
    t.db('mail_outbox').where({ recipient: email.toLowerCase(), kind: 'email-verification' }).orderBy('id')
  const verificationToken = async (email: string) => {
    const mails = await verificationMails(email)
    const match = mails.at(-1)?.text_body.match(/\/verify-email\?token=([A-Za-z0-9_-]+)/)
    return match ? decodeURIComponent(match[1]) : undefined
  }
  const verifyEmail = (token: string) => t.http().post('/users').set('X-Service-Method', 'verifyEmail').send({ token })
  const userRow = (id: number) => t.db('users').where({ id }).first()
  const membership = (organizationId: number, userId: number) =>
    t.db('organizations_users').where({ organization_id: organizationId, user_id: userId }).first()

  describe('an API key acts inside its organization only', () => {
    it("when an API key patches its user's password or e-mail, then 403, nothing changes and the old password still logs in", async () => {
      const tenant = await createTenant(t, 'Keyed')
      for (const body of [{ password: 'taken over secret' }, { email: uniqueEmail('thief') }, { first_name: 'Mallory' }]) {
        const res = await t.http().patch(`/users/${tenant.user.id}`).set(tenant.key).send(body)
        expect(res.status, JSON.stringify(body)).toBe(403)
        expect(res.body).toEqual(FORBIDDEN)
      }
      const row = await userRow(tenant.user.id)
      expect(row).toMatchObject({ email: tenant.user.email, first_name: 'Ada', sessions_valid_after: null })
      expect((await login(tenant.user.email, 'taken over secret')).status).toBe(401)
      expect((await login(tenant.user.email, tenant.password)).status).toBe(201)
      // Reading its own user stays allowed.
      const self = await t.http().get(`/users/${tenant.user.id}`).set(tenant.key)
      expect(self.status).toBe(200)
      expect(self.body).not.toHaveProperty('sessions_valid_after')
    })

    it('when an API key creates, renames or removes an organization, then 403 and nothing changes', async () => {
      const created = await t.http().post('/organizations').set(acme.key).send({ name: 'Shadow Ltd' })
      expect(created.status).toBe(403)
      expect(created.body).toEqual(FORBIDDEN)
      expect(await t.db('organizations').where({ name: 'Shadow Ltd' })).toHaveLength(0)
      const renamed = await t.http().patch(`/organizations/${acme.organization.id}`).set(acme.key).send({ name: 'Renamed' })
      expect(renamed.status).toBe(403)
      expect(renamed.body).toEqual(FORBIDDEN)
      // Another organization: the same 403, before anything is looked up.
      const elsewhere = await t.http().patch(`/organizations/${globex.organization.id}`).set(acme.key).send({ name: 'Renamed' })
      expect(elsewhere.status).toBe(403)
      // Organizations are never removed through the API.
      expect((await t.http().delete(`/organizations/${acme.organization.id}`).set(acme.key)).status).toBe(405)
      expect((await t.db('organizations').where({ id: acme.organization.id }).first()).name).toBe(acme.organization.name)
      expect((await t.db('organizations').where({ id: globex.organization.id }).first()).name).toBe(globex.organization.name)
      // The key still reads its own organization.
      const own = await t.http().get('/organizations').set(acme.key)
      expect(own.body.data.map((o: any) => o.id)).toEqual([acme.organization.id])
    })

    it('when an API key manages API keys (any method), then 403 and the keys are untouched; with a JWT the owner still may', async () => {
      const tenant = await createTenant(t, 'Keys')
      const [key] = await t.db('api_keys').where({ organization_id: tenant.organization.id })
      const calls = [
        t.http().get('/api-keys').set(tenant.key),
        t.http().get(`/api-keys/${key.id}`).set(tenant.key),
        t.http().post('/api-keys').set(tenant.key).send({ name: 'another' }),
        t.http().patch(`/api-keys/${key.id}`).set(tenant.key).send({ active: false }),
        t.http().delete(`/api-keys/${key.id}`).set(tenant.key),
        t.http().post('/api-keys').set(tenant.key).send({ organization_id: globex.organization.id, name: 'cross' })
      ]
      for (const res of await Promise.all(calls)) {
        expect(res.status).toBe(403)
        expect(res.body).toEqual(FORBIDDEN)
      }
      const keys = await t.db('api_keys').where({ organization_id: tenant.organization.id })
      expect(keys.map((k: any) => [k.id, k.active, k.deleted_at])).toEqual([[key.id, true, null]])
      expect(await t.db('api_keys').where({ organization_id: globex.organization.id, name: 'cross' })).toHaveLength(0)
      const listed = await t.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
      expect(listed.status).toBe(200)
      expect(listed.body.total).toBe(1)
      // CRM resources of its own organization are what a key is for.
      expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
    })

    it("when an API key accepts an invitation of another organization sent to its user, then 403 and the user does not join", async () => {
      const created = await invite(globex.bearer, { organization_id: globex.organization.id, email: acme.user.email, role: 'admin' })
      expect(created.status).toBe(201)
      const res = await accept(created.body.id, { token: created.body.token }, acme.key)
      expect(res.status).toBe(403)
      expect(res.body).toEqual(FORBIDDEN)
      expect(await membership(globex.organization.id, acme.user.id)).toBeUndefined()
      const read = await t.http().get(`${INVITES}/${created.body.id}`).set(globex.key)
      expect(read.body.status).toBe('pending')
      await t.http().delete(`${INVITES}/${created.body.id}`).set(globex.key).expect(200)
    })
  })

  describe('password and e-mail changes', () => {
    it('when the current password is missing or wrong, then 400 with errors.current_password and nothing changes', async () => {
      const user = await signUp(t)
      const bearer = bearerOf(user.token)
      for (const [body, reason] of [
        [{ password: 'a brand new secret' }, 'is required'],
        [{ password: 'a brand new secret', current_password: 'not my password' }, 'is wrong'],
        [{ email: uniqueEmail('moved') }, 'is required'],
        [{ email: uniqueEmail('moved'), current_password: 'not my password' }, 'is wrong']
      ] as const) {
        const res = await t.http().patch(`/users/${user.user.id}`).set(bearer).send(body)
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(res.body).toMatchObject({ name: 'BadRequest', errors: { current_password: reason } })
      }
      const row = await userRow(user.user.id)
      expect(row).toMatchObject({ email: user.user.email, sessions_valid_after: null })
      expect((await login(user.user.email, user.password)).status).toBe(201)
      // Other fields need no password, and the session goes on.
      const renamed = await t.http().patch(`/users/${user.user.id}`).set(bearer).send({ last_name: 'Byron' })
      expect(renamed.status).toBe(200)
      expect((await userRow(user.user.id)).last_name).toBe('Byron')
      expect((await t.http().get('/organizations').set(bearer)).status).toBe(200)
    })

    it('when the password changes, then a JWT issued before (even in the same second) is 401 and one issued right after works', async () => {
      const { user, password } = await signUp(t)
      // Start just after a second boundary, so that the whole sequence runs inside one second of `iat`.
      while (Date.now() % 1000 > 100) await sleep(10)
      const before = (await login(user.email, password)).body.accessToken
      const change = await t.http().patch(`/users/${user.id}`).set(bearerOf(before)).send({ password: 'a brand new secret', current_password: password })
      expect(change.status).toBe(200)
      expect(change.body).not.toHaveProperty('current_password')
      expect(change.body).not.toHaveProperty('sessions_valid_after')
      const after = (await login(user.email, 'a brand new secret')).body.accessToken
      expect(jwtPayload(after).iat).toBe(jwtPayload(before).iat)

      const row = await userRow(user.id)
      expect(row.sessions_valid_after).toBeInstanceOf(Date)
      expect(JSON.stringify(row)).not.toContain('current_password')
      const revoked = await t.http().get('/organizations').set(bearerOf(before))
      expect(revoked.status).toBe(401)
      expect(revoked.body.name).toBe('NotAuthenticated')
      expect((await t.http().post('/authentication').send({ strategy: 'jwt', accessToken: before })).status).toBe(401)
      expect((await t.http().get('/organizations').set(bearerOf(after))).status).toBe(200)
      expect((await login(user.email, password)).status).toBe(401)
    })

    it('when the e-mail changes, then it is stored lower-cased and unverified, earlier sessions end, and a link goes to the new address only', async () => {
      const { user, password, token } = await signUp(t)
      const oldLink = await verificationToken(user.email)
      const newEmail = uniqueEmail('Moved').toUpperCase()
      const res = await t.http().patch(`/users/${user.id}`).set(bearerOf(token)).send({ email: newEmail, current_password: password })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ email: newEmail.toLowerCase(), email_verified_at: null })
      expect((await userRow(user.id)).email).toBe(newEmail.toLowerCase())
      expect((await t.http().get(`/users/${user.id}`).set(bearerOf(token))).status).toBe(401)
      expect((await login(newEmail, password)).status).toBe(201)

      // The link mailed to the old address does not verify the new one.
      expect((await verifyEmail(oldLink!)).status).toBe(400)
      expect((await verificationMails(newEmail)).length).toBe(1)
      const verified = await verifyEmail((await verificationToken(newEmail))!)
      expect(verified.status).toBe(200)
      expect((await userRow(user.id)).email_verified_at).toBeInstanceOf(Date)
    })
  })

  describe('invitation tokens', () => {
    it('when an admin reads or lists an owner invitation, then no token is shown; an admin inviting an owner gets 403', async () => {
      const tenant = await createTenant(t, 'Tokens')
      const admin = await addMember(t, tenant, 'admin')
      const created = await invite(tenant.bearer, { organization_id: tenant.organization.id, email: uniqueEmail('boss'), role: 'owner' })
      expect(created.status).toBe(201)
      expect(created.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/)

      const list = await t.http().get(INVITES).set(admin.bearer).query({ organization_id: tenant.organization.id })
      expect(list.body.total).toBe(1)
      expect(list.body.data[0]).not.toHaveProperty('token')
      expect(list.body.data[0]).not.toHaveProperty('token_hash')
      const read = await t.http().get(`${INVITES}/${created.body.id}`).set(admin.bearer)
      expect(read.status).toBe(200)
      expect(JSON.stringify(read.body)).not.toContain(created.body.token)
      expect(JSON.stringify(read.body)).not.toContain(sha256(created.body.token))

      const ownerByAdmin = await invite(admin.bearer, { organization_id: tenant.organization.id, email: uniqueEmail('crown'), role: 'owner' })
      expect(ownerByAdmin.status).toBe(403)
      expect(ownerByAdmin.body.name).toBe('Forbidden')
      expect(await t.db('organizations_users_invites').where({ organization_id: tenant.organization.id })).toHaveLength(1)

      // The stored hash is no token: neither the lookup nor the acceptance takes it.
      const hash = (await t.db('organizations_users_invites').where({ id: created.body.id }).first()).token_hash
      expect(hash).toBe(sha256(created.body.token))
      expect((await t.http().get(INVITES).query({ token: hash })).body.total).toBe(0)
      expect((await accept(created.body.id, { token: hash, password: 'a long secret' })).status).toBe(400)
      // The holder of the real token still finds it without credentials.
      const lookup = await t.http().get(INVITES).query({ token: created.body.token })
      expect(lookup.body.data.map((i: any) => i.id)).toEqual([created.body.id])
      expect(lookup.body.data[0]).not.toHaveProperty('token')
    })

    it("when another organization's admin reads the invitation by id, then 404, and with its organization_id, 403", async () => {
      const created = await invite(acme.key, { email: uniqueEmail('private') })
      expect((await t.http().get(`${INVITES}/${created.body.id}`).set(globex.bearer)).status).toBe(404)
      const list = await t.http().get(INVITES).set(globex.bearer).query({ organization_id: acme.organization.id })
      expect(list.status).toBe(403)
    })
  })

  describe('e-mail verification', () => {
    it('when someone signs up, then a verification link is mailed; the account works unverified; the link verifies it once', async () => {
      const email = uniqueEmail('Fresh')
      const created = await t.http().post('/users').send({ email, password: 'long enough secret' })
      expect(created.status).toBe(201)
      expect(created.body.email_verified_at).toBeNull()
      const [mail] = await verificationMails(email)
      expect(mail).toMatchObject({ status: 'pending', organization_id: null, subject: 'Confirm your e-mail address' })
      expect(mail.text_body).toContain(`${APP_URL}/verify-email?token=`)
      const token = (await verificationToken(email))!
      const stored = await t.db('email_verifications').where({ user_id: created.body.id }).first()
      expect(stored.token_hash).toBe(sha256(token))
      expect(JSON.stringify(stored)).not.toContain(token)

      // The README's walk-through needs no verification.
      const session = await login(email, 'long enough secret')
      expect(session.status).toBe(201)
      const organization = await t.http().post('/organizations').set(bearerOf(session.body.accessToken)).send({ name: 'Unverified Ltd' })
      expect(organization.status).toBe(201)
      const key = await t.http().post('/api-keys').set(bearerOf(session.body.accessToken)).send({ organization_id: organization.body.id, name: 'k' })
      expect(key.status).toBe(201)
      expect((await t.http().post('/companies').set('x-api-key', key.body.key).send({ name: 'Initech' })).status).toBe(201)

      expect((await verifyEmail('not-a-token')).status).toBe(400)
      const res = await verifyEmail(token)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ id: created.body.id, email: email.toLowerCase(), email_verified_at: expect.any(String) })
      expect(res.body).not.toHaveProperty('password')
      expect((await userRow(created.body.id)).email_verified_at).toBeInstanceOf(Date)
      const again = await verifyEmail(token)
      expect(again.status).toBe(400)
      expect(again.body).toMatchObject({ message: INVALID_VERIFICATION, errors: { token: expect.any(String) } })
      const body = await t.http().post('/users').set('X-Service-Method', 'verifyEmail').send({ token, email })
      expect(body.status).toBe(400)
    })

    it('when a verification link has expired, then 400 and the account stays unverified', async () => {
      const { user } = await signUp(t)
      const token = (await verificationToken(user.email))!
      await t.db('email_verifications').where({ user_id: user.id }).update({ expires_at: t.db.raw("now() - interval '1 second'") })
      expect((await verifyEmail(token)).status).toBe(400)
      expect((await userRow(user.id)).email_verified_at).toBeNull()
    })
  })

  describe('accepting an invitation to an existing account', () => {
    /** Someone who signs up, creates an organization and invites an address they do not own: the inviter holds the token too. */
    const inviterOf = async (address: string) => {
      const attacker = await signUp(t)
      const organization = await t.http().post('/organizations').set(bearerOf(attacker.token)).send({ name: 'Attacker Ltd' })
      const created = await invite(bearerOf(attacker.token), { organization_id: organization.body.id, email: address, role: 'owner' })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      return { organizationId: organization.body.id as number, invitation: created.body }
    }
    /** What a takeover would have changed: the account row as stored, to compare before and after. */
    const accountState = async (id: number) => {
      const { password, email_verified_at, sessions_valid_after, first_name } = await userRow(id)
      return { password, email_verified_at, sessions_valid_after, first_name }
    }
    const anonymousAcceptance = async (address: string) => {
      const { invitation } = await inviterOf(address)
      return accept(invitation.id, { token: invitation.token, password: 'the attacker secret' })
    }

    it('when an inviter accepts without credentials for the address of an unverified account, with a password of their choosing, then 400: the account, its password and sessions stay as they were, and the password does not sign in', async () => {
      const victim = await signUp(t)
      const before = await accountState(victim.user.id)
      const { organizationId, invitation } = await inviterOf(victim.user.email)

      const res = await accept(invitation.id, { token: invitation.token, password: 'the attacker secret', first_name: 'Mallory' })
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(await accountState(victim.user.id)).toEqual(before)
      expect((await login(victim.user.email, 'the attacker secret')).status).toBe(401)
      expect((await login(victim.user.email, victim.password)).status).toBe(201)
      expect((await t.http().get('/organizations').set(bearerOf(victim.token))).status).toBe(200)
      expect(await membership(organizationId, victim.user.id)).toBeUndefined()
      expect((await t.db('organizations_users_invites').where({ id: invitation.id }).first()).status).toBe('pending')
    })

    it('when a verified account has just changed its address (unconfirmed) and an inviter accepts for the new address without credentials, then the same 400 and nothing changes', async () => {
      const victim = await signUp(t)
      await verifyEmail((await verificationToken(victim.user.email))!)
      const moved = uniqueEmail('moved')
      const change = await t.http().patch(`/users/${victim.user.id}`).set(bearerOf(victim.token)).send({ email: moved, current_password: victim.password })
      expect(change.status, JSON.stringify(change.body)).toBe(200)
      const before = await accountState(victim.user.id)
      expect(before.email_verified_at).toBeNull()

      const res = await anonymousAcceptance(moved)
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(await accountState(victim.user.id)).toEqual(before)
      expect((await login(moved, 'the attacker secret')).status).toBe(401)
      expect((await login(moved, victim.password)).status).toBe(201)
    })

    it('when an acceptance without credentials names a verified or an unverified account\'s address, then the two 400 answers are byte for byte the same, and the same as a missing password', async () => {
      const unverified = await signUp(t)
      const verified = await signUp(t)
      await verifyEmail((await verificationToken(verified.user.email))!)
      const answers = [await anonymousAcceptance(unverified.user.email), await anonymousAcceptance(verified.user.email)]
      const { invitation } = await inviterOf(uniqueEmail('nobody'))
      answers.push(await accept(invitation.id, { token: invitation.token }))

      expect(answers.map((res) => res.status)).toEqual([400, 400, 400])
      expect(answers[1].text).toBe(answers[0].text)
      expect(answers[2].text).toBe(answers[0].text)
      expect(answers[0].body).toEqual({
        name: 'BadRequest',
        message: 'To accept, sign in with the invited address\'s account, or set a password if you do not have one',
        code: 400,
        className: 'bad-request',
        errors: { password: 'is needed to accept without signing in, and creates the account of an address that has none' }
      })
    })

    it('when the account is verified, then its own password in the body does not accept either; its JWT does, and the account is unchanged', async () => {
      const owner = await signUp(t)
      await verifyEmail((await verificationToken(owner.user.email))!)
      const before = await accountState(owner.user.id)
      const created = await invite(acme.key, { email: owner.user.email })
      const withPassword = await accept(created.body.id, { token: created.body.token, password: owner.password })
      expect(withPassword.status).toBe(400)
      expect(await membership(acme.organization.id, owner.user.id)).toBeUndefined()

      const withJwt = await accept(created.body.id, { token: created.body.token }, bearerOf(owner.token))
      expect(withJwt.status, JSON.stringify(withJwt.body)).toBe(200)
      expect(withJwt.body.accepted_by_user_id).toBe(owner.user.id)
      expect(await membership(acme.organization.id, owner.user.id)).toMatchObject({ role: 'member' })
      expect(await accountState(owner.user.id)).toEqual(before)
      expect((await t.http().get('/organizations').set(bearerOf(owner.token))).status).toBe(200)
    })

    it('when an unverified account accepts with its own JWT, then it joins and its address stays unverified (the inviter could be the account\'s holder)', async () => {
      const invitee = await signUp(t)
      const created = await invite(globex.key, { email: invitee.user.email })
      const res = await accept(created.body.id, { token: created.body.token }, bearerOf(invitee.token))
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(await membership(globex.organization.id, invitee.user.id)).toMatchObject({ role: 'member' })
      expect((await userRow(invitee.user.id)).email_verified_at).toBeNull()
      expect((await t.http().get('/organizations').set(bearerOf(invitee.token))).status).toBe(200)
    })

    it('when the invited address has no account, then accepting without credentials creates it with the password sent, unverified, and mails it a verification link', async () => {
      const email = uniqueEmail('newcomer')
      const created = await invite(acme.key, { email })
      const res = await accept(created.body.id, { token: created.body.token, password: 'a long secret' })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      const row = await userRow(res.body.accepted_by_user_id)
      expect(row).toMatchObject({ email, sessions_valid_after: null, email_verified_at: null })
      expect(await verificationMails(email)).toHaveLength(1)
      expect((await login(email, 'a long secret')).status).toBe(201)
      expect(await membership(acme.organization.id, row.id)).toMatchObject({ role: 'member' })
    })
  })

  describe('e-mail case', () => {
    it('when Ada@Example.com signs up, then she logs in with the address as typed, in any case; it is stored lower-cased', async () => {
      const email = `Ada-${crypto.randomUUID().slice(0, 8)}@Example.com`
      const created = await t.http().post('/users').send({ email, password: 'long enough secret' })
      expect(created.status).toBe(201)
      expect((await userRow(created.body.id)).email).toBe(email.toLowerCase())
      for (const typed of [email, email.toLowerCase(), email.toUpperCase(), ` ${email} `]) {
        const res = await login(typed, 'long enough secret')
        expect(res.status, typed).toBe(201)
        expect(res.body.user.id).toBe(created.body.id)
      }
      const duplicate = await t.http().post('/users').send({ email: email.toUpperCase(), password: 'long enough secret' })
      expect(duplicate.status).toBe(409)
      expect((await login(email, 'wrong password!')).status).toBe(401)
    })

    it('when an invitation names the address in another case, then it is stored lower-cased, found, and accepted by the account', async () => {
      const email = `Grace-${crypto.randomUUID().slice(0, 8)}@Example.com`
      const grace = await signUp(t, { email })
      const created = await invite(acme.key, { email: email.toUpperCase() })
      expect(created.status).toBe(201)
      expect(created.body.email).toBe(email.toLowerCase())
      const found = await t.http().get(INVITES).set(acme.key).query({ email })
      expect(found.body.data.map((i: any) => i.id)).toEqual([created.body.id])
      const duplicate = await invite(acme.key, { email })
      expect(duplicate.status).toBe(400)
      const res = await accept(created.body.id, { token: created.body.token }, bearerOf(grace.token))
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(await membership(acme.organization.id, grace.user.id)).toMatchObject({ role: 'member' })
    })
  })
})
