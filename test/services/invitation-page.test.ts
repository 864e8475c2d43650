import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, uniqueEmail } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'

// With APP_URL unset, the invitation link in the mail opens a page of this service that accepts it.
describe('the invitation acceptance page', () => {
  let t: TestApp
  let acme: Tenant
  beforeAll(async () => {
    t = await startApp({ port: 4567 })
    acme = await createTenant(t)
  })
  afterAll(async () => {
    await t.close()
  })

  it('when APP_URL and PUBLIC_URL are not set, then both are the address the service listens on', () => {
    expect(t.app.get('appUrl')).toBe('http://localhost:4567')
    expect(t.app.get('publicUrl')).toBe('http://localhost:4567')
  })

  it('when the link of an invitation mail is opened, then an accessible page; its lookup and accept calls work without credentials', async () => {
    const email = uniqueEmail('invitee')
    const invited = await t.http().post('/organizations-users-invites').set(acme.key).send({ email, role: 'member' })
    expect(invited.status, JSON.stringify(invited.body)).toBe(201)
    const mail = await t.db('mail_outbox').where({ recipient: email }).first('text_body')
    const link = new URL(/http:\/\/localhost:4567\/\S+/.exec(mail.text_body)![0])
    expect(link.pathname).toBe('/invitations/accept')
    expect(link.searchParams.get('token')).toBe(invited.body.token)

    const page = await t.http().get(link.pathname + link.search)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    for (const [id, label] of [['sign_in_password', 'Password'], ['first_name', 'First name'], ['last_name', 'Last name'], ['password', 'Password']]) {
      expect(page.text).toContain(`<label for="${id}">${label}`)
      expect(page.text).toContain(`id="${id}"`)
    }
    expect(page.text).toContain('<button type="submit">Sign in and accept</button>')
    expect(page.text).toContain('<button type="submit">Create my account and accept</button>')
    expect(page.text).toContain('role="status"')
    expect(page.text).toContain("const api = '/organizations-users-invites'")

    // The page's two calls, as its script makes them: the lookup by token, then the acceptance.
    const lookup = await t.http().get('/organizations-users-invites').query({ token: link.searchParams.get('token') }).set('Accept', 'application/json')
    expect(lookup.status).toBe(200)
    expect(lookup.body.data).toHaveLength(1)
    const invitation = lookup.body.data[0]
    expect(invitation).toMatchObject({ email, role: 'member', status: 'pending', organization: { name: acme.organization.name } })

    const short = await t.http().patch(`/organizations-users-invites/${invitation.id}`).send({ status: 'accepted', token: invited.body.token, first_name: 'Grace', last_name: 'Hopper', password: 'short' })
    expect(short.status).toBe(400)
    expect(short.body.errors).toHaveProperty('password')

    const accepted = await t.http().patch(`/organizations-users-invites/${invitation.id}`)
      .send({ status: 'accepted', token: invited.body.token, first_name: 'Grace', last_name: 'Hopper', password: 'a long secret' })
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200)
    const login = await t.http().post('/authentication').send({ strategy: 'local', email, password: 'a long secret' })
    expect(login.status).toBe(201)
    const organizations = await t.http().get('/organizations').set({ Authorization: `Bearer ${login.body.accessToken}` })
    expect(organizations.body.data.map((o: any) => o.id)).toContain(acme.organization.id)
    const again = await t.http().get('/organizations-users-invites').query({ token: invited.body.token })
    expect(again.body.data[0].status).toBe('accepted')
  })

  it('when a link path carries the token as a path segment, then the page is served there with the token', async () => {
    const other = await startApp({ inviteLinkPath: '/join/{token}' })
    try {
      const page = await other.http().get('/join/abc%22def')
      expect(page.status).toBe(200)
      expect(page.text).toContain('data-token="abc&quot;def"')
      expect((await other.http().get('/invitations/accept?token=x')).status).toBe(404)
    } finally {
      await other.close()
    }
  })

  it('when the verification link mailed at sign-up is opened, then a page that confirms the address; its call works without credentials', async () => {
    const email = uniqueEmail('verify')
    const signedUp = await t.http().post('/users').send({ email, password: 'correct horse battery', first_name: 'Vera' })
    expect(signedUp.status).toBe(201)
    const mail = await t.db('mail_outbox').where({ recipient: email }).first('text_body')
    const link = new URL(/http:\/\/localhost:4567\/\S+/.exec(mail.text_body)![0])
    const page = await t.http().get(link.pathname + link.search)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.text).toContain('<h1>Confirm your e-mail address</h1>')
    expect(page.text).toContain("'X-Service-Method': 'verifyEmail'")
    const verified = await t.http().post('/users').set('X-Service-Method', 'verifyEmail').send({ token: link.searchParams.get('token') })
    expect(verified.status, JSON.stringify(verified.body)).toBe(200)
    const row = await t.db('users').where({ id: signedUp.body.id }).first('email_verified_at')
    expect(row.email_verified_at).not.toBeNull()
  })

  it('when APP_URL is set, then the service serves no acceptance page', async () => {
    const other = await startApp({ appUrl: 'https://app.example' })
    try {
      expect((await other.http().get('/invitations/accept?token=abc')).status).toBe(404)
    } finally {
      await other.close()
    }
  })
})
