import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant, signUp, uniqueEmail } from '../helpers/fixtures.js'

describe('accounts and authentication', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => {
    await t.close()
  })

  it('when someone signs up, then 201 with the user and no password, and the password is stored hashed', async () => {
    const email = uniqueEmail('Signup')
    const res = await t.http().post('/users').send({ email, password: 'long enough secret', first_name: 'Alan', last_name: 'Turing' })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number),
      email: email.toLowerCase(),
      first_name: 'Alan',
      last_name: 'Turing',
      email_verified_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String)
    })
    const row = await t.db('users').where({ id: res.body.id }).first()
    expect(row.password).toMatch(/^\$2[aby]\$/)
    expect(row.password).not.toContain('long enough secret')
  })

  it('when the e-mail is already registered (in any case), then 409 with errors.email, never 500', async () => {
    const email = uniqueEmail('dup')
    await t.http().post('/users').send({ email, password: 'long enough secret' })
    const res = await t.http().post('/users').send({ email: email.toUpperCase(), password: 'another secret!' })
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ name: 'Conflict', className: 'conflict', errors: { email: 'is already taken' } })
    expect(JSON.stringify(res.body)).not.toMatch(/insert|constraint|users_email/i)
  })

  it.each([
    [{ password: 'long enough secret' }, 'email'],
    [{ email: 'not-an-email', password: 'long enough secret' }, 'email'],
    [{ email: 'short@example.test', password: 'short' }, 'password'],
    [{ email: 'extra@example.test', password: 'long enough secret', role: 'admin' }, 'role']
  ])('when sign-up data is invalid (%j), then 400 naming %s', async (body, field) => {
    const res = await t.http().post('/users').send(body)
    expect(res.status).toBe(400)
    expect(res.body.errors).toHaveProperty(field)
  })

  it('when a sign-up or a verification body is an array, then 400 in the error shape and no account is created, never 500', async () => {
    const email = uniqueEmail('array')
    const signup = await t.http().post('/users').send([{ email, password: 'long enough secret', first_name: 'Ada', last_name: 'Lovelace' }])
    expect(signup.status).toBe(400)
    expect(signup.body).toEqual({ name: 'BadRequest', message: 'The body must be one JSON object: send one record at a time', code: 400, className: 'bad-request' })
    expect(await t.db('users').where({ email }).first()).toBeUndefined()
    const verify = await t.http().post('/users').set('X-Service-Method', 'verifyEmail').send([{ token: 'abc' }])
    expect(verify.status).toBe(400)
    expect(verify.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
  })

  it('when an account is changed with an array body, then 400 and the account is unchanged', async () => {
    const a = await signUp(t)
    const res = await t.http().patch(`/users/${a.user.id}`).set('Authorization', `Bearer ${a.token}`).send([{ first_name: 'Changed' }])
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ name: 'BadRequest', code: 400, className: 'bad-request' })
    expect((await t.db('users').where({ id: a.user.id }).first()).first_name).toBe('Ada')
  })

  it('when a call on an account by id carries a filter, then 400 naming it', async () => {
    const a = await signUp(t)
    const res = await t.http().get(`/users/${a.user.id}`).query({ email: 'someone@example.test' }).set('Authorization', `Bearer ${a.token}`)
    expect(res.status).toBe(400)
    expect(res.body.errors).toEqual({ email: 'is not allowed' })
  })

  it('when sign-up is switched off, then 403 and no account is created', async () => {
    const closed = await startApp({ signupEnabled: false })
    try {
      const email = uniqueEmail('closed')
      const res = await closed.http().post('/users').send({ email, password: 'long enough secret' })
      expect(res.status).toBe(403)
      expect(await closed.db('users').where({ email }).first()).toBeUndefined()
    } finally {
      await closed.close()
    }
  })

  it('when a user logs in with the right password, then 201 with a JWT, the authentication and the user without password', async () => {
    const { user, password } = await signUp(t)
    const res = await t.http().post('/authentication').send({ strategy: 'local', email: user.email, password })
    expect(res.status).toBe(201)
    expect(res.body.accessToken).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)
    expect(res.body.authentication).toMatchObject({ strategy: 'local' })
    expect(res.body.user).toMatchObject({ id: user.id, email: user.email })
    expect(res.body.user).not.toHaveProperty('password')
  })

  it('when the password is wrong or the e-mail unknown, then 401', async () => {
    const { user } = await signUp(t)
    const wrong = await t.http().post('/authentication').send({ strategy: 'local', email: user.email, password: 'wrong password' })
    expect(wrong.status).toBe(401)
    expect(wrong.body.name).toBe('NotAuthenticated')
    const unknown = await t.http().post('/authentication').send({ strategy: 'local', email: uniqueEmail(), password: 'whatever1' })
    expect(unknown.status).toBe(401)
  })

  it('when a login with the right password also carries an x-api-key or another user\'s bearer token, then the header is ignored: 201 for the account of the body', async () => {
    const tenant = await createTenant(t)
    const other = await signUp(t)
    const withKey = await t.http().post('/authentication').set(tenant.key).send({ strategy: 'local', email: tenant.user.email, password: tenant.password })
    expect(withKey.status, JSON.stringify(withKey.body)).toBe(201)
    expect(withKey.body.user).toMatchObject({ id: tenant.user.id, email: tenant.user.email })
    const withToken = await t.http().post('/authentication').set('Authorization', `Bearer ${other.token}`)
      .send({ strategy: 'local', email: tenant.user.email, password: tenant.password })
    expect(withToken.status, JSON.stringify(withToken.body)).toBe(201)
    expect(withToken.body.user.id).toBe(tenant.user.id)
    const me = await t.http().get(`/users/${tenant.user.id}`).set('Authorization', `Bearer ${withToken.body.accessToken}`)
    expect(me.body.id).toBe(tenant.user.id)
    const wrong = await t.http().post('/authentication').set(tenant.key).send({ strategy: 'local', email: tenant.user.email, password: 'wrong password' })
    expect(wrong.status).toBe(401)
  })

  it('when a login carries a query parameter, then 400 naming it: the login takes none', async () => {
    const { user, password } = await signUp(t)
    const res = await t.http().post('/authentication').query({ email: uniqueEmail() }).send({ strategy: 'local', email: user.email, password })
    expect(res.status, JSON.stringify(res.body)).toBe(400)
    expect(res.body.errors).toEqual({ email: 'is not allowed' })
  })

  it('when a login body gives a field of the wrong type (array, number, object, null) for any strategy, then 400 in the error shape naming the field, never 500', async () => {
    const { user, password } = await signUp(t)
    const bodies: [Record<string, unknown>, string][] = [
      [{ strategy: 'local', email: user.email, password }, 'password'],
      [{ strategy: 'local', email: user.email, password }, 'email'],
      [{ strategy: 'jwt', accessToken: 'a.b.c' }, 'accessToken'],
      [{ strategy: 'api-key', apiKey: 'crm_abc' }, 'apiKey']
    ]
    for (const [body, field] of bodies) {
      for (const wrong of [[1, 2, 3], 42, { $gt: '' }, null]) {
        const res = await t.http().post('/authentication').send({ ...body, [field]: wrong })
        const sent = `${field}: ${JSON.stringify(wrong)}`
        expect(res.status, `${sent} → ${JSON.stringify(res.body)}`).toBe(400)
        expect(res.body, sent).toEqual({ name: 'BadRequest', message: expect.any(String), code: 400, className: 'bad-request', errors: { [field]: expect.any(String) } })
      }
    }
    const long = await t.http().post('/authentication').send({ strategy: 'local', email: user.email, password: 'x'.repeat(10_000) })
    expect(long.status).toBe(400)
    expect(long.body.errors).toEqual({ password: expect.any(String) })
    expect((await t.http().post('/authentication').send({ strategy: 'local', email: user.email, password })).status).toBe(201)
  })

  it('when a login names no strategy, an unknown one, or sends a field its strategy does not take, then 400 naming it', async () => {
    const { user, password } = await signUp(t)
    for (const strategy of [undefined, 'saml', 'constructor', 7]) {
      const res = await t.http().post('/authentication').send({ strategy, email: user.email, password })
      expect(res.status, JSON.stringify(strategy)).toBe(400)
      expect(res.body.errors, JSON.stringify(strategy)).toEqual({ strategy: expect.any(String) })
    }
    const extra = await t.http().post('/authentication').send({ strategy: 'local', email: user.email, password, accessToken: 'a.b.c' })
    expect(extra.status).toBe(400)
    expect(extra.body.errors).toEqual({ accessToken: 'is not allowed' })
  })

  it('when someone tries to trade an API key for a JWT, then 401', async () => {
    const tenant = await createTenant(t)
    const res = await t.http().post('/authentication').send({ strategy: 'api-key', apiKey: tenant.apiKey })
    expect(res.status).toBe(401)
  })

  it('when a JWT is malformed or signed with another secret, then 401', async () => {
    const bad = await t.http().get('/organizations').set('Authorization', 'Bearer not.a.jwt')
    expect(bad.status).toBe(401)
    const forged = 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImFjY2VzcyJ9.eyJzdWIiOiIxIiwiYXVkIjoiY3JtLWFwaSJ9.c2lnbmF0dXJl'
    const res = await t.http().get('/organizations').set('Authorization', `Bearer ${forged}`)
    expect(res.status).toBe(401)
  })

  it('when a user reads their own account, then 200; anyone else\'s, then 404', async () => {
    const a = await signUp(t)
    const b = await signUp(t)
    const own = await t.http().get(`/users/${a.user.id}`).set('Authorization', `Bearer ${a.token}`)
    expect(own.status).toBe(200)
    expect(own.body).not.toHaveProperty('password')
    const other = await t.http().get(`/users/${b.user.id}`).set('Authorization', `Bearer ${a.token}`)
    expect(other.status).toBe(404)
    const list = await t.http().get('/users').set('Authorization', `Bearer ${a.token}`)
    expect(list.body.data.map((u: any) => u.id)).toEqual([a.user.id])
  })

  it('when a user patches their own name and password, then the new password logs in; patching another user is 404', async () => {
    const a = await signUp(t)
    const b = await signUp(t)
    const res = await t.http().patch(`/users/${a.user.id}`).set('Authorization', `Bearer ${a.token}`).send({ first_name: 'Changed', password: 'a brand new secret', current_password: a.password })
    expect(res.status).toBe(200)
    expect(res.body.first_name).toBe('Changed')
    const login = await t.http().post('/authentication').send({ strategy: 'local', email: a.user.email, password: 'a brand new secret' })
    expect(login.status).toBe(201)
    // The password change ended a's earlier sessions (account-security.test.ts): the new login's token is used.
    const other = await t.http().patch(`/users/${b.user.id}`).set('Authorization', `Bearer ${login.body.accessToken}`).send({ first_name: 'Hacked' })
    expect(other.status).toBe(404)
    expect((await t.db('users').where({ id: b.user.id }).first()).first_name).not.toBe('Hacked')
  })

  it('when an API key is deactivated, then it gets 401 Invalid API key; reactivated, it works again', async () => {
    const tenant = await createTenant(t)
    const keys = await t.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    const id = keys.body.data[0].id
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
    await t.http().patch(`/api-keys/${id}`).set(tenant.bearer).send({ active: false }).expect(200)
    const denied = await t.http().get('/companies').set(tenant.key)
    expect(denied.status).toBe(401)
    expect(denied.body).toEqual({ name: 'NotAuthenticated', message: 'Invalid API key', code: 401, className: 'not-authenticated' })
    await t.http().patch(`/api-keys/${id}`).set(tenant.bearer).send({ active: true }).expect(200)
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(200)
  })

  it('when an API key is revoked with DELETE, then it is 401 for good', async () => {
    const tenant = await createTenant(t)
    const keys = await t.http().get('/api-keys').set(tenant.bearer).query({ organization_id: tenant.organization.id })
    await t.http().delete(`/api-keys/${keys.body.data[0].id}`).set(tenant.bearer).expect(200)
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(401)
  })

  it('when the key\'s user has left the organization, then the key is 401', async () => {
    const tenant = await createTenant(t)
    await t.db('organizations_users').where({ organization_id: tenant.organization.id, user_id: tenant.user.id }).delete()
    expect((await t.http().get('/companies').set(tenant.key)).status).toBe(401)
  })
})
