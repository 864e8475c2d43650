import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, signUp, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

import { INVALID_TOKEN, INVITES, ISO_MS, sleep, useInvitationApp } from './invitation-fixtures.js'
import type { Mailbox } from './invitation-fixtures.js'

describe('organization invitations: accepting, revoking, listing', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let mailbox: Mailbox
  const { worker, invite, accept } = useInvitationApp((world) => ({ t, acme, globex, mailbox } = world))

  describe('accept', () => {
    it('when a new colleague accepts with the token, then the account, membership and role exist, and the colleague logs in and sees the organization', async () => {
      const email = uniqueEmail('newbie')
      const created = await invite(acme, { email, role: 'admin', organization_id: acme.organization.id }, acme.bearer)
      await worker().deliverDue()
      const link = mailbox.to(email)[0].raw.match(/https:\/\/app\.crm\.example\/join\?invitation=([A-Za-z0-9_-]+)/)!
      const token = decodeURIComponent(link[1])
      expect(token).toBe(created.body.token)

      const res = await accept(created.body.id, { token, password: 'a long secret', first_name: 'Nia', last_name: 'Newcomer' })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ id: created.body.id, status: 'accepted', accepted_at: expect.stringMatching(ISO_MS), accepted_by_user_id: expect.any(Number) })

      const login = await t.http().post('/authentication').send({ strategy: 'local', email, password: 'a long secret' })
      expect(login.status).toBe(201)
      expect(login.body.user).toMatchObject({ id: res.body.accepted_by_user_id, email, first_name: 'Nia', last_name: 'Newcomer' })
      expect(login.body.user).not.toHaveProperty('password')
      const bearer = { Authorization: `Bearer ${login.body.accessToken}` }
      const organizations = await t.http().get('/organizations').set(bearer)
      expect(organizations.body.data.map((o: any) => o.id)).toEqual([acme.organization.id])
      const members = await t.http().get('/organizations-users').set(acme.key).query({ organization_id: acme.organization.id, user_id: res.body.accepted_by_user_id })
      expect(members.body.data).toEqual([expect.objectContaining({ role: 'admin', user: expect.objectContaining({ email }) })])

      const read = await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)
      expect(read.body.status).toBe('accepted')
    })

    it('when the invited e-mail has no account and no password is sent, then 400 with errors.password and nothing changes', async () => {
      const email = uniqueEmail('nopass')
      const created = await invite(acme, { email })
      const res = await accept(created.body.id, { token: created.body.token })
      expect(res.status).toBe(400)
      expect(res.body.errors).toHaveProperty('password')
      const short = await accept(created.body.id, { token: created.body.token, password: 'short' })
      expect(short.status).toBe(400)
      expect(short.body.errors).toHaveProperty('password')
      expect(await t.db('users').where({ email })).toHaveLength(0)
      expect((await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)).body.status).toBe('pending')
      await worker().deliverDue()
    })

    it('when the invited address has an account, then it joins only signed in with its JWT (the token and a password are 400); a member invited again gets the new role', async () => {
      const existing = await signUp(t)
      const created = await invite(globex, { email: existing.user.email, role: 'member' })
      // account-security.test.ts has the whole rule: an acceptance never hands over an existing account.
      for (const body of [{ token: created.body.token }, { token: created.body.token, password: 'a chosen secret' }]) {
        const refused = await accept(created.body.id, body)
        expect(refused.status).toBe(400)
        expect(refused.body.errors).toHaveProperty('password')
      }
      expect((await t.http().post('/authentication').send({ strategy: 'local', email: existing.user.email, password: 'a chosen secret' })).status).toBe(401)
      const bearer = { Authorization: `Bearer ${existing.token}` }
      const res = await accept(created.body.id, { token: created.body.token }, bearer)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.accepted_by_user_id).toBe(existing.user.id)
      const organizations = await t.http().get('/organizations').set(bearer)
      expect(organizations.body.data.map((o: any) => o.id)).toEqual([globex.organization.id])

      // A role change if already a member.
      const promote = await invite(acme, { email: existing.user.email, role: 'admin', organization_id: acme.organization.id }, acme.bearer)
      await t.db('organizations_users').insert({ organization_id: acme.organization.id, user_id: existing.user.id, role: 'member' })
      const promoted = await accept(promote.body.id, { token: promote.body.token }, bearer)
      expect(promoted.status, JSON.stringify(promoted.body)).toBe(200)
      const members = await t.http().get('/organizations-users').set(acme.key).query({ organization_id: acme.organization.id, user_id: existing.user.id })
      expect(members.body.data.map((m: any) => m.role)).toEqual(['admin'])
      await worker().deliverDue()
    })

    it('when the token is used a second time, is wrong, or has expired, then 400 with the invalid-token message', async () => {
      const created = await invite(acme, { email: uniqueEmail('once') })
      expect((await accept(created.body.id, { token: created.body.token, password: 'a long secret' })).status).toBe(200)
      const second = await accept(created.body.id, { token: created.body.token, password: 'a long secret' })
      expect(second.status).toBe(400)
      expect(second.body).toMatchObject({ name: 'BadRequest', message: INVALID_TOKEN, errors: { token: expect.any(String) } })

      const other = await invite(acme, { email: uniqueEmail('wrong') })
      const wrong = await accept(other.body.id, { token: created.body.token, password: 'a long secret' })
      expect(wrong.status).toBe(400)
      expect(wrong.body.message).toBe(INVALID_TOKEN)
      expect((await accept(999999, { token: other.body.token, password: 'a long secret' })).status).toBe(400)

      const stale = await invite(acme, { email: uniqueEmail('stale') })
      await t.db('organizations_users_invites').where({ id: stale.body.id }).update({ expires_at: t.db.raw("now() - interval '1 millisecond'") })
      const expired = await accept(stale.body.id, { token: stale.body.token, password: 'a long secret' })
      expect(expired.status).toBe(400)
      expect(expired.body.message).toBe(INVALID_TOKEN)
      const read = await t.http().get(`${INVITES}/${stale.body.id}`).set(acme.key)
      expect(read.body.status).toBe('expired')
      await worker().deliverDue()
    })

    it('when INVITE_TTL_SECONDS is short, then the invitation expires by itself and reads as expired', async () => {
      t.app.set('inviteTtlSeconds', 1)
      let created
      try {
        created = await invite(acme, { email: uniqueEmail('brief') })
      } finally {
        t.app.set('inviteTtlSeconds', 86400)
      }
      expect(Date.parse(created.body.expires_at) - Date.parse(created.body.created_at)).toBe(1000)
      await sleep(1100)
      const res = await accept(created.body.id, { token: created.body.token, password: 'a long secret' })
      expect(res.status).toBe(400)
      expect(res.body.message).toBe(INVALID_TOKEN)
      const lookup = await t.http().get(INVITES).query({ token: created.body.token })
      expect(lookup.body.data.map((i: any) => i.status)).toEqual(['expired'])
      await worker().deliverDue()
    })

    it('when a PATCH tries to change anything but status to accepted, then 400', async () => {
      const created = await invite(acme, { email: uniqueEmail('fields') })
      const role = await accept(created.body.id, { token: created.body.token, role: 'owner' })
      expect(role.status).toBe(400)
      expect(role.body.errors).toMatchObject({ role: 'is not allowed' })
      const pending = await t.http().patch(`${INVITES}/${created.body.id}`).send({ status: 'pending', token: created.body.token })
      expect(pending.status).toBe(400)
      expect(pending.body.errors).toHaveProperty('status')
      const noToken = await t.http().patch(`${INVITES}/${created.body.id}`).send({ status: 'accepted' })
      expect(noToken.body.errors).toMatchObject({ token: 'is required' })
      await worker().deliverDue()
    })

    it('when two acceptances of one invitation run at the same time, then exactly one gets 200 and the other 400 (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      const email = uniqueEmail('race')
      const created = await invite(acme, { email, role: 'member' })
      const body = { token: created.body.token, password: 'a long secret' }
      const results = await Promise.all([accept(created.body.id, body), accept(created.body.id, body), accept(created.body.id, body)])
      expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400])
      const users = await t.db('users').where({ email })
      expect(users).toHaveLength(1)
      expect(await t.db('organizations_users').where({ organization_id: acme.organization.id, user_id: users[0].id })).toHaveLength(1)
      await worker().deliverDue()
    })
  })

  describe('revoke', () => {
    it('when an admin revokes a pending invitation, then it is soft-deleted and its token no longer works; an accepted one cannot be revoked', async () => {
      const created = await invite(acme, { email: uniqueEmail('revoked') })
      const res = await t.http().delete(`${INVITES}/${created.body.id}`).set(acme.key)
      expect(res.status).toBe(200)
      expect(res.body.deleted_at).toMatch(ISO_MS)
      expect(res.body.updated_at).toBe(res.body.deleted_at)
      expect((await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(INVITES).query({ token: created.body.token })).body.total).toBe(0)
      expect((await accept(created.body.id, { token: created.body.token, password: 'a long secret' })).status).toBe(400)

      const used = await invite(acme, { email: uniqueEmail('used') })
      await accept(used.body.id, { token: used.body.token, password: 'a long secret' })
      const revokeUsed = await t.http().delete(`${INVITES}/${used.body.id}`).set(acme.key)
      expect(revokeUsed.status).toBe(400)
      expect(revokeUsed.body.message).toBe('Only a pending invitation can be revoked')
      await worker().deliverDue()
    })
  })

  describe('list', () => {
    it('when listing with filters, then the envelope holds the matching invitations with organization and inviter, status expired included', async () => {
      const tenant = await createTenant(t, 'Lister')
      const emails = [uniqueEmail('a'), uniqueEmail('b'), uniqueEmail('c')]
      const made = []
      for (const email of emails) made.push((await invite(tenant, { email })).body)
      await t.db('organizations_users_invites').where({ id: made[1].id }).update({ expires_at: t.db.raw("now() - interval '1 second'") })
      await accept(made[2].id, { token: made[2].token, password: 'a long secret' })

      const all = await t.http().get(INVITES).set(tenant.key).send({ query: { $sort: { id: 1 } } })
      expect(all.status).toBe(200)
      expect(all.body).toMatchObject({ total: 3, limit: 10, skip: 0 })
      expect(all.body.data.map((i: any) => i.status)).toEqual(['pending', 'expired', 'accepted'])
      expect(all.body.data[0]).toMatchObject({
        organization: { id: tenant.organization.id, name: tenant.organization.name },
        created_by_user: { id: tenant.user.id, email: tenant.user.email, first_name: tenant.user.first_name, last_name: tenant.user.last_name }
      })
      // Tokens are never listed (an admin reading an owner invitation's token could accept it).
      for (const row of all.body.data) expect(row).not.toHaveProperty('token')
      for (const row of all.body.data) expect(row).not.toHaveProperty('token_hash')
      for (const status of ['pending', 'expired', 'accepted']) {
        const res = await t.http().get(INVITES).set(tenant.key).query({ status })
        expect(res.body.data.map((i: any) => i.status), status).toEqual([status])
      }
      const byEmail = await t.http().get(INVITES).set(tenant.bearer).query({ organization_id: tenant.organization.id, email: emails[0].toUpperCase() })
      expect(byEmail.body.data.map((i: any) => i.id)).toEqual([made[0].id])
      const paged = await t.http().get(INVITES).set(tenant.key).send({ query: { $limit: 1, $skip: 1, $sort: { id: -1 } } })
      expect(paged.body).toMatchObject({ total: 3, limit: 1, skip: 1 })
      expect(paged.body.data.map((i: any) => i.id)).toEqual([made[1].id])
      const unknown = await t.http().get(INVITES).set(tenant.key).query({ colour: 'red' })
      expect(unknown.status).toBe(400)
      const noOrganization = await t.http().get(INVITES).set(tenant.bearer)
      expect(noOrganization.status).toBe(400)
      await worker().deliverDue()
    })

    it('when a page of invitations is listed or one is read, then each carries its creator and organization', async () => {
      const tenant = await createTenant(t, 'Counter')
      const admin = await addMember(t, tenant, 'admin')
      for (let i = 0; i < 6; i++) {
        await invite(tenant, { email: uniqueEmail('n'), organization_id: tenant.organization.id }, i % 2 ? admin.bearer : tenant.key)
      }
      const page = await t.http().get(INVITES).set(tenant.key).query({ $limit: 6 })
      expect(page.body.data).toHaveLength(6)
      expect(new Set(page.body.data.map((i: any) => i.created_by_user.id))).toEqual(new Set([tenant.user.id, admin.user.id]))
      const one = await t.http().get(`${INVITES}/${page.body.data[0].id}`).set(tenant.key)
      expect(one.body).toMatchObject({ id: page.body.data[0].id, organization: { id: tenant.organization.id } })
      await worker().deliverDue()
    })
  })

  describe('cross-organization', () => {
    it("when another organization's admin reads, accepts or revokes an invitation by id, then 404; by organization_id, then 403", async () => {
      const created = await invite(acme, { email: uniqueEmail('private') })
      const intruder = await addMember(t, globex, 'admin')
      for (const headers of [globex.key, globex.bearer, intruder.bearer]) {
        const read = await t.http().get(`${INVITES}/${created.body.id}`).set(headers)
        expect(read.status).toBe(404)
        expect(read.body.message).toBe(`No record found for id '${created.body.id}'`)
        const accepted = await accept(created.body.id, { token: created.body.token }, headers)
        // An API key never accepts invitations (its user would join another organization): 403 for any id.
        expect(accepted.status).toBe(headers === globex.key ? 403 : 404)
        expect((await t.http().delete(`${INVITES}/${created.body.id}`).set(headers)).status).toBe(404)
      }
      const list = await t.http().get(INVITES).set(globex.key).query({ organization_id: acme.organization.id })
      expect(list.status).toBe(403)
      const listJwt = await t.http().get(INVITES).set(globex.bearer).query({ organization_id: acme.organization.id })
      expect(listJwt.status).toBe(403)
      const createElsewhere = await invite(globex, { email: uniqueEmail(), organization_id: acme.organization.id })
      expect(createElsewhere.status).toBe(403)
      const ownList = await t.http().get(INVITES).set(globex.key).query({ email: created.body.email })
      expect(ownList.body.total).toBe(0)

      // Untouched: still pending, and no membership for the intruders.
      const read = await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)
      expect(read.body.status).toBe('pending')
      await worker().deliverDue()
    })

    it('when a member of the same organization who is not the invitee accepts with their own credentials, then 403 and the invitation stays pending', async () => {
      const created = await invite(acme, { email: uniqueEmail('someone') })
      const admin = await addMember(t, acme, 'admin')
      const res = await accept(created.body.id, { token: created.body.token }, admin.bearer)
      expect(res.status).toBe(403)
      expect((await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)).body.status).toBe('pending')
      await worker().deliverDue()
    })
  })
})
