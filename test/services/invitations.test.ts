import crypto from 'node:crypto'
import { Writable } from 'node:stream'
import { describe, it, expect } from 'vitest'
import { pino } from 'pino'
import type { TestApp } from '../helpers/app.js'
import { addMember, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { MailWorker } from '../../src/mail/index.js'
import { smtpTransport } from '../../src/mail/transport.js'

import { APP_URL, INVITES, ISO_MS, sleep, useInvitationApp } from './invitation-fixtures.js'
import type { Mailbox } from './invitation-fixtures.js'

describe('organization invitations', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let mailbox: Mailbox
  const { worker, invite, accept, outboxFor } = useInvitationApp((world) => ({ t, acme, globex, mailbox } = world))

  describe('create and e-mail', () => {
    it('when an owner invites an address, then 201 with a pending invitation, and the e-mail arrives on the SMTP server with the link and token', async () => {
      const email = uniqueEmail('colleague')
      const res = await invite(acme, { email: email.toUpperCase(), role: 'admin', organization_id: acme.organization.id }, acme.bearer)
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number),
        organization_id: acme.organization.id,
        email,
        role: 'admin',
        status: 'pending',
        token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        expires_at: expect.stringMatching(ISO_MS),
        created_by_user_id: acme.user.id,
        accepted_by_user_id: null,
        accepted_at: null,
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        deleted_at: null,
        organization: { id: acme.organization.id, name: acme.organization.name },
        created_by_user: { id: acme.user.id, email: acme.user.email, first_name: acme.user.first_name, last_name: acme.user.last_name }
      })
      expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(24 * 60 * 60 * 1000)

      // Written in the request's transaction; nothing is sent until the worker runs.
      const [queued] = await outboxFor(email)
      expect(queued).toMatchObject({ status: 'pending', attempts: 0, kind: 'invitation', organization_id: acme.organization.id })
      // now() is the transaction's start: equal timestamps mean one transaction wrote both rows.
      expect(queued.created_at.toISOString()).toBe(res.body.created_at)
      expect(mailbox.to(email)).toHaveLength(0)

      const report = await worker().deliverDue()
      expect(report.sent).toBeGreaterThanOrEqual(1)
      const [mail] = mailbox.to(email)
      expect(mail.raw).toContain(`${APP_URL}/join?invitation=${res.body.token}`)
      expect(mail.raw).toContain(acme.organization.name)
      expect(mail.raw).toMatch(/^From: Acme CRM <crm@acme\.example>/m)
      const [sent] = await outboxFor(email)
      expect(sent).toMatchObject({ status: 'sent', attempts: 1, last_error: null })
      expect(sent.sent_at).toBeInstanceOf(Date)

      // The token is shown to its creator once; the database keeps only its hash; reads never show it.
      const row = await t.db('organizations_users_invites').where({ id: res.body.id }).first()
      expect(row.token_hash).toBe(crypto.createHash('sha256').update(res.body.token).digest('hex'))
      expect(JSON.stringify(row)).not.toContain(res.body.token)
      const { token: _shownOnce, ...stored } = res.body
      const read = await t.http().get(`${INVITES}/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual({
        ...stored,
        organization: { id: acme.organization.id, name: acme.organization.name },
        created_by_user: { id: acme.user.id, email: acme.user.email, first_name: acme.user.first_name, last_name: acme.user.last_name }
      })
    })

    it('when the address already belongs to a member, then 400 with a clear message and no invitation or e-mail is written', async () => {
      const member = await addMember(t, acme, 'member')
      const res = await invite(acme, { email: member.user.email })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ message: 'This e-mail address already belongs to a member of the organization', errors: { email: expect.any(String) } })
      expect(await t.db('organizations_users_invites').where({ email: member.user.email })).toHaveLength(0)
      expect(await outboxFor(member.user.email)).toHaveLength(0)
    })

    it('when the address has a live pending invitation, then 400; once that one has expired, a new invitation is allowed', async () => {
      const email = uniqueEmail('twice')
      const first = await invite(acme, { email })
      expect(first.status).toBe(201)
      const again = await invite(acme, { email })
      expect(again.status).toBe(400)
      expect(again.body.message).toBe('A pending invitation for this e-mail address already exists in this organization')
      expect(await outboxFor(email)).toHaveLength(1)

      // The same address may have a pending invitation in another organization.
      expect((await invite(globex, { email })).status).toBe(201)

      await t.db('organizations_users_invites').where({ id: first.body.id }).update({ expires_at: t.db.raw("now() - interval '1 second'") })
      const renewed = await invite(acme, { email })
      expect(renewed.status).toBe(201)
      expect(renewed.body.token).not.toBe(first.body.token)
      await worker().deliverDue()
    })

    it('when the body is invalid or carries fields a client may not set, then 400 with errors per field', async () => {
      const res = await invite(acme, { email: 'not-an-email', role: 'king', status: 'accepted', token: 'x' })
      expect(res.status).toBe(400)
      expect(res.body.errors).toMatchObject({ email: expect.any(String), role: expect.any(String), status: 'is not allowed', token: 'is not allowed' })
      const missing = await t.http().post(INVITES).set(acme.key).send({})
      expect(missing.body.errors).toMatchObject({ email: 'is required', role: 'is required' })
    })

    it('when a member (not an admin) invites, then 403; an admin may invite members but not owners; an owner may invite an owner', async () => {
      const member = await addMember(t, acme, 'member')
      const asMember = await invite(acme, { email: uniqueEmail(), organization_id: acme.organization.id }, member.bearer)
      expect(asMember.status).toBe(403)
      expect(asMember.body.name).toBe('Forbidden')
      const memberList = await t.http().get(INVITES).set(member.bearer).query({ organization_id: acme.organization.id })
      expect(memberList.status).toBe(403)

      const admin = await addMember(t, acme, 'admin')
      const byAdmin = await invite(acme, { email: uniqueEmail(), organization_id: acme.organization.id, role: 'admin' }, admin.bearer)
      expect(byAdmin.status).toBe(201)
      const ownerByAdmin = await invite(acme, { email: uniqueEmail(), organization_id: acme.organization.id, role: 'owner' }, admin.bearer)
      expect(ownerByAdmin.status).toBe(403)
      const ownerByOwner = await invite(acme, { email: uniqueEmail(), organization_id: acme.organization.id, role: 'owner' }, acme.bearer)
      expect(ownerByOwner.status).toBe(201)
      await worker().deliverDue()
    })

    it("when an owner's API key invites an owner or an admin, then 403 and nothing is written; it may invite a member", async () => {
      for (const role of ['owner', 'admin']) {
        const email = uniqueEmail(role)
        const res = await invite(acme, { email, role })
        expect(res.status, role).toBe(403)
        expect(res.body).toMatchObject({
          name: 'Forbidden', code: 403, className: 'forbidden',
          message: 'An API key may invite members only: inviting an owner or an admin needs a person signed in (a bearer JWT)'
        })
        expect(res.body).not.toHaveProperty('token')
        expect(await t.db('organizations_users_invites').where({ email })).toHaveLength(0)
        expect(await outboxFor(email)).toHaveLength(0)
      }
      const member = await invite(acme, { email: uniqueEmail('plain'), role: 'member' })
      expect(member.status).toBe(201)
      await worker().deliverDue()
    })

    it("when an owner's API key raises a role through /organizations-users or removes a member, then 403 and the membership stays as it was", async () => {
      const colleague = await addMember(t, acme, 'member')
      const [membership] = (await t.http().get('/organizations-users').set(acme.key).query({ user_id: colleague.user.id })).body.data
      expect(membership).toMatchObject({ user_id: colleague.user.id, role: 'member' })
      for (const role of ['owner', 'admin']) {
        const raised = await t.http().patch(`/organizations-users/${membership.id}`).set(acme.key).send({ role })
        expect(raised.status, role).toBe(403)
      }
      expect((await t.http().delete(`/organizations-users/${membership.id}`).set(acme.key)).status).toBe(403)
      const stored = await t.db('organizations_users').where({ id: membership.id }).first()
      expect(stored.role).toBe('member')
      // Accepting an invitation (which grants its role) is for people too.
      const created = await invite(acme, { email: uniqueEmail('newcomer'), role: 'admin', organization_id: acme.organization.id }, acme.bearer)
      expect(created.status).toBe(201)
      const accepted = await accept(created.body.id, { token: created.body.token, password: 'a long secret' }, acme.key)
      expect(accepted.status).toBe(403)
      expect((await t.http().get(`${INVITES}/${created.body.id}`).set(acme.key)).body.status).toBe('pending')
      // With the owner's own sign-in, the role changes.
      const promoted = await t.http().patch(`/organizations-users/${membership.id}`).set(acme.bearer).send({ role: 'admin' })
      expect(promoted.status).toBe(200)
      expect((await t.db('organizations_users').where({ id: membership.id }).first()).role).toBe('admin')
      await worker().deliverDue()
    })

    it('when a request has no credentials, then creating, reading by id and listing without a token are 401', async () => {
      const created = await invite(acme, { email: uniqueEmail() })
      expect((await t.http().post(INVITES).send({ organization_id: acme.organization.id, email: uniqueEmail(), role: 'member' })).status).toBe(401)
      expect((await t.http().get(`${INVITES}/${created.body.id}`)).status).toBe(401)
      expect((await t.http().get(INVITES).query({ organization_id: acme.organization.id })).status).toBe(401)
      expect((await t.http().delete(`${INVITES}/${created.body.id}`)).status).toBe(401)
      await worker().deliverDue()
    })
  })

  describe('delivery', () => {
    it('when the mail server is down, then the invitation still succeeds, the message waits with backoff, and is delivered exactly once when the server is back', async () => {
      await worker().deliverDue()
      await mailbox.stop()
      try {
        const email = uniqueEmail('later')
        const res = await invite(acme, { email })
        expect(res.status).toBe(201)

        const down = await worker().deliverDue()
        expect(down).toMatchObject({ sent: 0, retrying: 1 })
        const [waiting] = await outboxFor(email)
        expect(waiting).toMatchObject({ status: 'pending', attempts: 1, last_error: expect.any(String) })
        expect(waiting.next_attempt_at.getTime()).toBeGreaterThan(Date.now())
        expect(waiting.next_attempt_at.getTime() - waiting.updated_at.getTime()).toBe(1000)
        // Not due yet: a poll inside the backoff window does not try again.
        expect(await worker().deliverDue()).toMatchObject({ sent: 0, retrying: 0 })

        await sleep(1100)
        expect(await worker().deliverDue()).toMatchObject({ sent: 0, retrying: 1 })
        const [twice] = await outboxFor(email)
        expect(twice.attempts).toBe(2)
        // Exponential: the second wait is twice the first (1 s, then 2 s).
        expect(twice.next_attempt_at.getTime() - twice.updated_at.getTime()).toBe(2000)

        await mailbox.start(mailbox.port)
        await sleep(2100)
        expect(await worker().deliverDue()).toMatchObject({ sent: 1 })
        expect(await worker().deliverDue()).toMatchObject({ sent: 0 })
        expect(mailbox.to(email)).toHaveLength(1)
        expect(mailbox.to(email)[0].raw).toContain(res.body.token)
        const [sent] = await outboxFor(email)
        expect(sent).toMatchObject({ status: 'sent', attempts: 3, last_error: null })
      } finally {
        if (!mailbox.port || !(await isListening(mailbox.port))) await mailbox.start(mailbox.port)
      }
    })

    it('when a message fails on every attempt, then it is marked failed after the configured attempts and not tried again', async () => {
      const email = uniqueEmail('bounce')
      const res = await invite(acme, { email })
      expect(res.status).toBe(201)
      const [row] = await outboxFor(email)
      const deadEnd = new MailWorker({
        db: t.db, logger: pino({ level: 'silent' }), transport: { send: async () => { throw new Error('550 mailbox unavailable') }, close: () => {} },
        from: 'x@example.test', pollIntervalMs: 0, maxAttempts: 2, retryBaseMs: 0
      })
      await deadEnd.deliverDue()
      await sleep(5)
      await deadEnd.deliverDue()
      const [failed] = await t.db('mail_outbox').where({ id: row.id })
      expect(failed).toMatchObject({ status: 'failed', attempts: 2, last_error: '550 mailbox unavailable' })
      expect(await worker().deliverDue()).toMatchObject({ sent: 0 })
      expect(mailbox.to(email)).toHaveLength(0)
    })

    it('when several workers drain the outbox at the same time, then every message is sent exactly once (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      await worker().deliverDue()
      const emails = Array.from({ length: 8 }, () => uniqueEmail('crowd'))
      for (const email of emails) expect((await invite(acme, { email })).status).toBe(201)
      const others = [1, 2].map(() => new MailWorker({
        db: t.db, logger: pino({ level: 'silent' }), transport: smtpTransport(`smtp://127.0.0.1:${mailbox.port}`),
        from: 'x@example.test', pollIntervalMs: 0, maxAttempts: 5, retryBaseMs: 1000
      }))
      const reports = await Promise.all([worker().deliverDue(), ...others.map((w) => w.deliverDue())])
      await Promise.all(others.map((w) => w.stop()))
      // Other messages in the shared outbox may be delivered too; these eight are counted once each.
      expect(reports.reduce((sum, r) => sum + r.sent, 0)).toBeGreaterThanOrEqual(8)
      for (const email of emails) expect(mailbox.to(email), email).toHaveLength(1)
      const rows = await t.db('mail_outbox').whereIn('recipient', emails)
      expect(rows.map((r) => [r.status, r.attempts])).toEqual(emails.map(() => ['sent', 1]))
    })

    it('when no SMTP server is configured, then the message is written to the log and kept in the outbox as logged', async () => {
      await worker().deliverDue()
      const email = uniqueEmail('nosmtp')
      const res = await invite(acme, { email })
      const lines: string[] = []
      const sink = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done() } })
      const logOnly = new MailWorker({ db: t.db, logger: pino({ level: 'info' }, sink), transport: null, from: 'x@example.test', pollIntervalMs: 0, maxAttempts: 3, retryBaseMs: 1000 })
      expect(await logOnly.deliverDue()).toMatchObject({ logged: 1, sent: 0 })
      const entry = JSON.parse(lines.find((line) => line.includes(email))!)
      expect(entry.to).toBe(email)
      expect(entry.text).toContain(`${APP_URL}/join?invitation=${res.body.token}`)
      const [logged] = await outboxFor(email)
      expect(logged).toMatchObject({ status: 'logged', attempts: 1 })
      expect(await worker().deliverDue()).toMatchObject({ sent: 0, logged: 0 })
      expect(mailbox.to(email)).toHaveLength(0)
    })

    it('when the background loop runs, then a new invitation is delivered without anyone calling the worker', async () => {
      await worker().deliverDue()
      const email = uniqueEmail('loop')
      const looping = new MailWorker({
        db: t.db, logger: pino({ level: 'silent' }), transport: smtpTransport(`smtp://127.0.0.1:${mailbox.port}`),
        from: 'x@example.test', pollIntervalMs: 50, maxAttempts: 3, retryBaseMs: 1000
      })
      looping.start()
      try {
        expect((await invite(acme, { email })).status).toBe(201)
        for (let i = 0; i < 100 && mailbox.to(email).length === 0; i++) await sleep(50)
      } finally {
        await looping.stop()
      }
      expect(mailbox.to(email)).toHaveLength(1)
    })
  })

  describe('token lookup', () => {
    it('when the list call carries only the token and no credentials, then it returns that one invitation with its organization and inviter', async () => {
      const created = await invite(acme, { email: uniqueEmail('lookup') })
      await invite(acme, { email: uniqueEmail('other') })
      const res = await t.http().get(INVITES).query({ token: created.body.token })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ total: 1, skip: 0 })
      expect(res.body.data).toHaveLength(1)
      expect(res.body.data[0]).toMatchObject({
        id: created.body.id,
        status: 'pending',
        organization: { id: acme.organization.id, name: acme.organization.name },
        created_by_user: { id: acme.user.id, email: acme.user.email }
      })
      expect(res.body.data[0]).not.toHaveProperty('token')
      expect(res.body.data[0]).not.toHaveProperty('token_hash')
      const viaBody = await t.http().get(INVITES).send({ query: { token: created.body.token } })
      expect(viaBody.body.data.map((i: any) => i.id)).toEqual([created.body.id])

      const unknown = await t.http().get(INVITES).query({ token: 'no-such-token' })
      expect(unknown.status).toBe(200)
      expect(unknown.body).toMatchObject({ total: 0, data: [] })

      const widened = await t.http().get(INVITES).query({ token: created.body.token, organization_id: acme.organization.id })
      expect(widened.status).toBe(400)
      expect(widened.body.message).toBe('Without credentials, the token is the only filter allowed')
      const paged = await t.http().get(INVITES).send({ query: { token: created.body.token, $limit: 100 } })
      expect(paged.status).toBe(400)
      // The token is compared for equality only: an operator cannot turn the lookup into a listing.
      for (const token of [{ $ne: 'x' }, { $in: [created.body.token] }, { $gt: '' }]) {
        const probe = await t.http().get(INVITES).send({ query: { token } })
        expect(probe.status, JSON.stringify(token)).toBe(400)
        expect(probe.body).not.toHaveProperty('data')
      }
      await worker().deliverDue()
    })
  })
})

async function isListening(port: number) {
  const net = await import('node:net')
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}
