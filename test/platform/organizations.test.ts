import { describe, it, expect } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { addMember, createTenant, keyFor, signUp } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('organizations, memberships and API keys', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  describe('/organizations', () => {
    it('when a user creates an organization, then 201 and the user is its owner', async () => {
      const { token, user } = await signUp(t)
      const res = await t.http().post('/organizations').set('Authorization', `Bearer ${token}`).send({ name: 'Fresh Co' })
      expect(res.status).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number), name: 'Fresh Co', subscription_status: 'active', timezone: 'UTC', deleted_retention_days: 30,
        created_at: expect.any(String), updated_at: expect.any(String)
      })
      const membership = await t.db('organizations_users').where({ organization_id: res.body.id, user_id: user.id }).first()
      expect(membership.role).toBe('owner')
    })

    it('when an API key tries to create an organization, then 403', async () => {
      const res = await t.http().post('/organizations').set(acme.key).send({ name: 'By key' })
      expect(res.status).toBe(403)
    })

    it('when a user lists organizations, then only theirs, with searchTerm on the name', async () => {
      const { token } = await signUp(t)
      const bearer = { Authorization: `Bearer ${token}` }
      await t.http().post('/organizations').set(bearer).send({ name: 'Alpha Widgets' })
      await t.http().post('/organizations').set(bearer).send({ name: 'Beta Gadgets' })
      const all = await t.http().get('/organizations').set(bearer)
      expect(all.body).toMatchObject({ total: 2, limit: 10, skip: 0 })
      const some = await t.http().get('/organizations').set(bearer).send({ query: { searchTerm: 'widg' } })
      expect(some.body.data.map((o: any) => o.name)).toEqual(['Alpha Widgets'])
    })

    it('when an API key lists organizations, then only the key\'s organization', async () => {
      const res = await t.http().get('/organizations').set(acme.key)
      expect(res.body.data.map((o: any) => o.id)).toEqual([acme.organization.id])
    })

    it('when someone reads another organization by id, then 404', async () => {
      expect((await t.http().get(`/organizations/${globex.organization.id}`).set(acme.bearer)).status).toBe(404)
      expect((await t.http().get(`/organizations/${globex.organization.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().get(`/organizations/${acme.organization.id}`).set(acme.key)).status).toBe(200)
    })

    it('when a call by id carries a list filter (searchTerm), then 400 naming it and nothing changes', async () => {
      const read = await t.http().get(`/organizations/${acme.organization.id}?searchTerm=ab`).set(acme.bearer)
      expect(read.status).toBe(400)
      expect(read.body).toEqual({ name: 'BadRequest', message: 'Validation failed', code: 400, className: 'bad-request', errors: { searchTerm: 'is not allowed' } })
      const patched = await t.http().patch(`/organizations/${acme.organization.id}?searchTerm=ab`).set(acme.bearer).send({ name: 'Renamed by filter' })
      expect(patched.status).toBe(400)
      expect(patched.body.errors).toEqual({ searchTerm: 'is not allowed' })
      expect((await t.db('organizations').where({ id: acme.organization.id }).first()).name).toBe(acme.organization.name)
    })

    it('when an organization is created or changed with an array body, then 400 and nothing is written', async () => {
      const { token, user } = await signUp(t)
      const bearer = { Authorization: `Bearer ${token}` }
      const created = await t.http().post('/organizations').set(bearer).send([{ name: 'Array Co' }])
      expect(created.status).toBe(400)
      expect(created.body).toEqual({ name: 'BadRequest', message: 'The body must be one JSON object: send one record at a time', code: 400, className: 'bad-request' })
      expect(await t.db('organizations_users').where({ user_id: user.id })).toEqual([])
      const patched = await t.http().patch(`/organizations/${acme.organization.id}`).set(acme.bearer).send([{ name: 'Renamed by array' }])
      expect(patched.status).toBe(400)
      expect((await t.db('organizations').where({ id: acme.organization.id }).first()).name).toBe(acme.organization.name)
    })

    it('when an owner sets a time zone, then it is kept; an invalid name is 400; a member gets 403', async () => {
      const ok = await t.http().patch(`/organizations/${acme.organization.id}`).set(acme.bearer).send({ timezone: 'Europe/Madrid' })
      expect(ok.status).toBe(200)
      expect(ok.body.timezone).toBe('Europe/Madrid')
      const bad = await t.http().patch(`/organizations/${acme.organization.id}`).set(acme.bearer).send({ timezone: 'Mars/Olympus' })
      expect(bad.status).toBe(400)
      expect(bad.body.errors).toHaveProperty('timezone')
      const member = await addMember(t, acme, 'member')
      const denied = await t.http().patch(`/organizations/${acme.organization.id}`).set(member.bearer).send({ name: 'Renamed' })
      expect(denied.status).toBe(403)
      const other = await t.http().patch(`/organizations/${globex.organization.id}`).set(acme.bearer).send({ name: 'Renamed' })
      expect(other.status).toBe(404)
    })
  })

  describe('/organizations-users', () => {
    it('when members are listed, then each row carries its user', async () => {
      const org = await createTenant(t, 'Team')
      for (let i = 0; i < 4; i++) await addMember(t, org, 'member')
      const members = await t.http().get('/organizations-users').set(org.key).query({ $limit: 5 })
      expect(members.body.total).toBe(5)
      expect(members.body.data.every((m: any) => m.user?.id === m.user_id)).toBe(true)
      const owner = members.body.data.find((m: any) => m.user_id === org.user.id)
      expect(owner).toMatchObject({ role: 'owner', organization_id: org.organization.id, user: { id: org.user.id, email: org.user.email, first_name: 'Ada', last_name: 'Lovelace' } })
      const filtered = await t.http().get('/organizations-users').set(org.key).send({ query: { role: 'owner' } })
      expect(filtered.body.total).toBe(1)
    })

    it('when an owner changes a member to admin, then the role is stored', async () => {
      const org = await createTenant(t, 'Roles')
      const member = await addMember(t, org, 'member')
      const row = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: member.user.id }).first()
      const res = await t.http().patch(`/organizations-users/${row.id}`).set(org.bearer).send({ role: 'admin' })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ role: 'admin', user: { id: member.user.id } })
      expect((await t.db('organizations_users').where({ id: row.id }).first()).role).toBe('admin')
    })

    it('when a member tries to change roles or remove someone, then 403', async () => {
      const org = await createTenant(t, 'Flat')
      const member = await addMember(t, org, 'member')
      const ownerRow = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: org.user.id }).first()
      expect((await t.http().patch(`/organizations-users/${ownerRow.id}`).set(member.bearer).send({ role: 'member' })).status).toBe(403)
      expect((await t.http().delete(`/organizations-users/${ownerRow.id}`).set(member.bearer)).status).toBe(403)
    })

    it('when an admin tries to grant ownership, then 403', async () => {
      const org = await createTenant(t, 'Admins')
      const admin = await addMember(t, org, 'admin')
      const member = await addMember(t, org, 'member')
      const row = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: member.user.id }).first()
      expect((await t.http().patch(`/organizations-users/${row.id}`).set(admin.bearer).send({ role: 'owner' })).status).toBe(403)
      expect((await t.http().patch(`/organizations-users/${row.id}`).set(admin.bearer).send({ role: 'admin' })).status).toBe(200)
    })

    it('when the last owner would be demoted or removed, then 400 and nothing changes', async () => {
      const org = await createTenant(t, 'Solo')
      const ownerRow = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: org.user.id }).first()
      const demote = await t.http().patch(`/organizations-users/${ownerRow.id}`).set(org.bearer).send({ role: 'admin' })
      expect(demote.status).toBe(400)
      expect(demote.body.message).toMatch(/at least one owner/)
      const remove = await t.http().delete(`/organizations-users/${ownerRow.id}`).set(org.bearer)
      expect(remove.status).toBe(400)
      expect((await t.db('organizations_users').where({ id: ownerRow.id }).first()).role).toBe('owner')
    })

    it('when a second owner exists, then the first may step down', async () => {
      const org = await createTenant(t, 'Duo')
      await addMember(t, org, 'owner')
      const ownerRow = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: org.user.id }).first()
      const res = await t.http().patch(`/organizations-users/${ownerRow.id}`).set(org.bearer).send({ role: 'member' })
      expect(res.status).toBe(200)
      expect(res.body.role).toBe('member')
    })

    it('when an admin removes a member, then the membership is gone and their key stops working', async () => {
      const org = await createTenant(t, 'Leavers')
      const member = await addMember(t, org, 'member')
      const memberKey = await keyFor(t, org, member.user.id)
      expect((await t.http().get('/companies').set(memberKey)).status).toBe(200)
      const row = await t.db('organizations_users').where({ organization_id: org.organization.id, user_id: member.user.id }).first()
      const res = await t.http().delete(`/organizations-users/${row.id}`).set(org.bearer)
      expect(res.status).toBe(200)
      expect(await t.db('organizations_users').where({ id: row.id }).first()).toBeUndefined()
      expect((await t.http().get('/companies').set(memberKey)).status).toBe(401)
    })

    it('cross-organization: by id 404, by organization_id 403', async () => {
      const row = await t.db('organizations_users').where({ organization_id: globex.organization.id }).first()
      expect((await t.http().get(`/organizations-users/${row.id}`).set(acme.key)).status).toBe(404)
      expect((await t.http().patch(`/organizations-users/${row.id}`).set(acme.bearer).send({ role: 'admin' })).status).toBe(404)
      expect((await t.http().delete(`/organizations-users/${row.id}`).set(acme.bearer)).status).toBe(404)
      expect((await t.http().get('/organizations-users').set(acme.key).send({ query: { organization_id: globex.organization.id } })).status).toBe(403)
    })
  })

  describe('/api-keys', () => {
    it('when an owner creates a key, then the plain key is shown once and stored only as a hash', async () => {
      const res = await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: acme.organization.id, name: 'CI' })
      expect(res.status).toBe(201)
      expect(res.body.key).toMatch(/^crm_[\w-]{8}_[\w-]{43}$/)
      expect(res.body.key.startsWith(res.body.prefix)).toBe(true)
      expect(res.body).toMatchObject({ name: 'CI', active: true, user_id: acme.user.id, organization_id: acme.organization.id, last_used_at: null })
      expect(res.body).not.toHaveProperty('key_hash')
      const row = await t.db('api_keys').where({ id: res.body.id }).first()
      expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/)
      expect(JSON.stringify(row)).not.toContain(res.body.key)
      const list = await t.http().get('/api-keys').set(acme.bearer).query({ organization_id: acme.organization.id })
      const listed = list.body.data.find((k: any) => k.id === res.body.id)
      expect(listed).toMatchObject({ id: res.body.id, name: 'CI', prefix: res.body.prefix, active: true, user_id: acme.user.id })
      expect(listed).not.toHaveProperty('key')
      expect(listed).not.toHaveProperty('key_hash')
    })

    it('when a key is used, then last_used_at is set', async () => {
      const org = await createTenant(t, 'Usage')
      await t.http().get('/companies').set(org.key).expect(200)
      const list = await t.http().get('/api-keys').set(org.bearer).query({ organization_id: org.organization.id })
      expect(list.body.data[0].last_used_at).toEqual(expect.any(String))
    })

    it('when a member (not admin) touches API keys, then 403', async () => {
      const member = await addMember(t, acme, 'member')
      expect((await t.http().post('/api-keys').set(member.bearer).send({ organization_id: acme.organization.id, name: 'x' })).status).toBe(403)
      expect((await t.http().get('/api-keys').set(member.bearer).query({ organization_id: acme.organization.id })).status).toBe(403)
      const keyId = (await t.db('api_keys').where({ organization_id: acme.organization.id }).first()).id
      expect((await t.http().get(`/api-keys/${keyId}`).set(member.bearer)).status).toBe(403)
      expect((await t.http().delete(`/api-keys/${keyId}`).set(member.bearer)).status).toBe(403)
    })

    it('when an admin manages keys, then it is allowed', async () => {
      const admin = await addMember(t, acme, 'admin')
      const res = await t.http().post('/api-keys').set(admin.bearer).send({ organization_id: acme.organization.id, name: 'admin key' })
      expect(res.status).toBe(201)
      expect(res.body.user_id).toBe(admin.user.id)
    })

    it('when a key tries to patch anything but name and active, then 400', async () => {
      const keyId = (await t.db('api_keys').where({ organization_id: acme.organization.id }).first()).id
      const res = await t.http().patch(`/api-keys/${keyId}`).set(acme.bearer).send({ key_hash: 'x', organization_id: globex.organization.id })
      expect(res.status).toBe(400)
    })

    it('cross-organization: by id 404, by organization_id 403', async () => {
      const globexKey = (await t.db('api_keys').where({ organization_id: globex.organization.id }).first()).id
      expect((await t.http().get(`/api-keys/${globexKey}`).set(acme.bearer)).status).toBe(404)
      expect((await t.http().patch(`/api-keys/${globexKey}`).set(acme.bearer).send({ active: false })).status).toBe(404)
      expect((await t.http().delete(`/api-keys/${globexKey}`).set(acme.bearer)).status).toBe(404)
      expect((await t.http().post('/api-keys').set(acme.bearer).send({ organization_id: globex.organization.id, name: 'x' })).status).toBe(403)
      // An API key manages no keys at all (test/platform/account-security.test.ts): 403 before any lookup.
      expect((await t.http().get(`/api-keys/${globexKey}`).set(acme.key)).status).toBe(403)
      expect((await t.http().get('/companies').set(globex.key)).status).toBe(200)
    })
  })
})
