import crypto from 'node:crypto'
import type { TestApp } from './app.js'

export interface Tenant {
  user: { id: number; email: string; first_name: string; last_name: string }
  password: string
  token: string
  organization: { id: number; name: string }
  apiKey: string
  /** Headers authenticating with the organization's API key. */
  key: Record<string, string>
  /** Headers authenticating with the user's bearer JWT. */
  bearer: Record<string, string>
}

export const uniqueEmail = (label = 'user') => `${label}-${crypto.randomUUID().slice(0, 8)}@example.test`

/** Signs up a user through the API and logs in. */
export async function signUp(t: TestApp, fields: Partial<{ first_name: string; last_name: string; email: string }> = {}) {
  const password = 'correct horse battery'
  const email = fields.email ?? uniqueEmail()
  const created = await t.http().post('/users').send({ email, password, first_name: fields.first_name ?? 'Ada', last_name: fields.last_name ?? 'Lovelace' })
  if (created.status !== 201) throw new Error(`sign-up failed: ${created.status} ${JSON.stringify(created.body)}`)
  const login = await t.http().post('/authentication').send({ strategy: 'local', email, password })
  if (login.status !== 201) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`)
  return { user: created.body, password, token: login.body.accessToken as string }
}

/** A new user, owner of a new organization, with an API key: the README's bootstrap, through HTTP. */
export async function createTenant(t: TestApp, name = 'Acme'): Promise<Tenant> {
  const { user, password, token } = await signUp(t)
  const bearer = { Authorization: `Bearer ${token}` }
  const organization = await t.http().post('/organizations').set(bearer).send({ name: `${name} ${crypto.randomUUID().slice(0, 6)}` })
  if (organization.status !== 201) throw new Error(`organization failed: ${JSON.stringify(organization.body)}`)
  const key = await t.http().post('/api-keys').set(bearer).send({ organization_id: organization.body.id, name: 'test key' })
  if (key.status !== 201) throw new Error(`api key failed: ${JSON.stringify(key.body)}`)
  return { user, password, token, organization: organization.body, apiKey: key.body.key, key: { 'x-api-key': key.body.key }, bearer }
}

/**
 * Adds a new user to a tenant's organization with a role. Memberships normally come from
 * invitations; the fixture writes the row directly so tests of other resources stay short.
 */
export async function addMember(t: TestApp, tenant: Tenant, role: 'owner' | 'admin' | 'member' = 'member') {
  const member = await signUp(t, { first_name: 'Grace', last_name: 'Hopper' })
  await t.db('organizations_users').insert({ organization_id: tenant.organization.id, user_id: member.user.id, role })
  return { ...member, bearer: { Authorization: `Bearer ${member.token}` } }
}

/** An API key for a member, created by the owner and attributed to the member. */
export async function keyFor(t: TestApp, tenant: Tenant, userId: number) {
  const created = await t.http().post('/api-keys').set(tenant.bearer).send({ organization_id: tenant.organization.id, name: 'member key' })
  await t.db('api_keys').where({ id: created.body.id }).update({ user_id: userId })
  return { 'x-api-key': created.body.key as string }
}

/**
 * Runs fn as if the service ran with WEBHOOK_ALLOW_PRIVATE=true, then restores the setting: for a
 * webhook subscription to a closed loopback port, which the service accepts only then and whose
 * deliveries it refuses once the setting is off again.
 */
export async function allowingPrivateAddresses<T>(t: TestApp, fn: () => Promise<T>): Promise<T> {
  const before = t.app.get('webhookAllowPrivate')
  t.app.set('webhookAllowPrivate', true)
  try {
    return await fn()
  } finally {
    t.app.set('webhookAllowPrivate', before)
  }
}
