import { describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { ISO_MS, created } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ALL_CHANNELS = ['whatsapp', 'instagram', 'messenger', 'webchat', 'sms', 'playground']

describe('conversation predefined messages', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  const post = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/conversation-predefined-messages').set(tenant.key).send(body)
  const read = async (tenant: Tenant, id: number) => (await t.http().get(`/conversation-predefined-messages/${id}`).set(tenant.key)).body

  it('when created with a title and content, then 201 offered on every channel, with its creator', async () => {
    const res = await post(acme, { title: 'Thanks', content: 'Thank you {{contact.first_name}}!' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number), organization_id: acme.organization.id, title: 'Thanks', shortcut: null,
      content: 'Thank you {{contact.first_name}}!', channels: ALL_CHANNELS, created_by_user_id: acme.user.id,
      created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
    })
    expect(await read(acme, res.body.id)).toEqual(res.body)
  })

  it.each([
    [{ content: 'x' }, 'title'],
    [{ title: 'x' }, 'content'],
    [{ title: 'x', content: 'y', shortcut: 'Has Spaces' }, 'shortcut'],
    [{ title: 'x', content: 'y', shortcut: 'a'.repeat(33) }, 'shortcut'],
    [{ title: 'x', content: 'y', channels: ['fax'] }, 'channels.0'],
    [{ title: 'x', content: 'y', channels: [] }, 'channels'],
    [{ title: 'x', content: 'y', created_by_user_id: 1 }, 'created_by_user_id']
  ])('when the body is %j, then 400 with errors.%s', async (body, field) => {
    const res = await post(acme, body)
    expect(res.status).toBe(400)
    expect(Object.keys(res.body.errors)).toEqual([field])
  })

  it('when a live shortcut is taken, then 409 errors.shortcut; once the holder is deleted, the shortcut is free; another organization may use it', async () => {
    const first = created(await post(acme, { title: 'Hours', content: 'We open at 9', shortcut: 'hours' }), 'first')
    const taken = await post(acme, { title: 'Hours again', content: 'x', shortcut: 'hours' })
    expect(taken.status).toBe(409)
    expect(taken.body.errors).toEqual({ shortcut: 'is already taken' })
    created(await post(globex, { title: 'Hours', content: 'We open at 10', shortcut: 'hours' }), 'other organization')
    await t.http().delete(`/conversation-predefined-messages/${first.id}`).set(acme.key).expect(200)
    expect((await t.http().get(`/conversation-predefined-messages/${first.id}`).set(acme.key)).status).toBe(404)
    created(await post(acme, { title: 'Hours', content: 'We open at 8', shortcut: 'hours' }), 'reused')
  })

  it('when patched, then the fields change and read back; a taken shortcut is a 409', async () => {
    const message = created(await post(acme, { title: 'Bye', content: 'Bye!' }), 'message')
    created(await post(acme, { title: 'Other', content: 'x', shortcut: 'other' }), 'other')
    const res = await t.http().patch(`/conversation-predefined-messages/${message.id}`).set(acme.key).send({ title: 'Goodbye', channels: ['sms'], shortcut: 'bye' })
    expect(res.status).toBe(200)
    expect(await read(acme, message.id)).toMatchObject({ title: 'Goodbye', channels: ['sms'], shortcut: 'bye', content: 'Bye!' })
    const clash = await t.http().patch(`/conversation-predefined-messages/${message.id}`).set(acme.key).send({ shortcut: 'other' })
    expect(clash.status).toBe(409)
    expect((await read(acme, message.id)).shortcut).toBe('bye')
  })

  it('when listed by title (partial), shortcut or channel, then only the matching ones', async () => {
    const org = await createTenant(t, 'Replies')
    const refund = created(await post(org, { title: 'Refund policy', content: 'x', shortcut: 'refund', channels: ['whatsapp', 'sms'] }), 'refund')
    const refunded = created(await post(org, { title: 'Refund done', content: 'x', channels: ['webchat'] }), 'done')
    const hello = created(await post(org, { title: 'Hello', content: 'x' }), 'hello')
    const list = async (query: Record<string, unknown>) => {
      const res = await t.http().get('/conversation-predefined-messages').set(org.key).send({ query })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body.data.map((m: any) => m.id)
    }
    expect(await list({ title: 'REFUND' })).toEqual([refund.id, refunded.id])
    expect(await list({ shortcut: 'refund' })).toEqual([refund.id])
    expect(await list({ channel: 'sms' })).toEqual([refund.id, hello.id])
    expect(await list({ channel: 'webchat', title: 'refund' })).toEqual([refunded.id])
    const wrong = await t.http().get('/conversation-predefined-messages').set(org.key).send({ query: { channel: 'fax' } })
    expect(wrong.status).toBe(400)
  })

  it("when another organization's predefined message is read, patched or deleted by id, then 404; naming its organization, then 403", async () => {
    const theirs = created(await post(globex, { title: 'Secret', content: 'x' }), 'theirs')
    expect((await t.http().get(`/conversation-predefined-messages/${theirs.id}`).set(acme.key)).status).toBe(404)
    expect((await t.http().patch(`/conversation-predefined-messages/${theirs.id}`).set(acme.key).send({ title: 'Mine' })).status).toBe(404)
    expect((await t.http().delete(`/conversation-predefined-messages/${theirs.id}`).set(acme.key)).status).toBe(404)
    expect((await post(acme, { organization_id: globex.organization.id, title: 'x', content: 'y' })).status).toBe(403)
    expect((await t.http().get('/conversation-predefined-messages').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
    expect(await read(globex, theirs.id)).toMatchObject({ title: 'Secret', deleted_at: null })
  })
})
