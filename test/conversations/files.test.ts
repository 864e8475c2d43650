import { describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { png } from '../storage/fixtures.js'
import { ISO_MS, createConversation, created } from './fixtures.js'
import { useApp } from '../helpers/use-app.js'

describe('conversation files (local storage)', () => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant

  useApp({ tenants: ['Acme', 'Globex'] }, (app) => ({ t, tenants: [acme, globex] } = app))

  /** Signs an upload for the tenant and PUTs the bytes to it, as a browser would. */
  async function upload(tenant: Tenant, bytes: Buffer, contentType = 'image/png') {
    const signed = created(await t.http().post('/storage-url-signing').set(tenant.key)
      .send({ type: 'conversation-file', file_name: 'photo.png', content_type: contentType, file_size: bytes.length }), 'signed upload')
    const { pathname, search } = new URL(signed.upload_url)
    const put = await t.http().put(`${pathname}${search}`).set(signed.headers).send(bytes)
    expect(put.status).toBe(200)
    return signed
  }
  const register = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/conversation-files').set(tenant.key).send(body)

  it('when an uploaded file is registered, then 201 with its url, it reads back, and a message can carry it', async () => {
    const conversation = await createConversation(t, acme, { channel: 'whatsapp' })
    const bytes = png(7)
    const signed = await upload(acme, bytes)
    const res = await register(acme, { conversation_id: conversation.id, storage_key: signed.storage_key, file_name: 'photo.png', file_type: 'image/png', file_size: bytes.length })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number), organization_id: acme.organization.id, conversation_id: conversation.id, storage_key: signed.storage_key,
      file_name: 'photo.png', file_type: 'image/png', file_size: bytes.length, url: signed.public_url, created_by_user_id: acme.user.id,
      created_at: expect.stringMatching(ISO_MS), updated_at: expect.stringMatching(ISO_MS), deleted_at: null
    })
    expect((await t.http().get(`/conversation-files/${res.body.id}`).set(acme.key)).body).toEqual(res.body)
    const listed = await t.http().get('/conversation-files').set(acme.key).send({ query: { conversation_id: conversation.id } })
    expect(listed.body.data).toEqual([res.body])
    const stored = await t.http().get(new URL(res.body.url).pathname)
    expect(stored.status).toBe(200)

    const message = await t.http().post('/conversation-messages-transform-outgoing-whatsapp').set(acme.key)
      .send({ conversation_id: conversation.id, file_ids: [res.body.id], content_type: 'image' })
    expect(message.status, JSON.stringify(message.body)).toBe(201)
    expect(message.body).toMatchObject({ content: '', content_type: 'image', file_ids: [res.body.id] })
  })

  it('when nothing was uploaded at the key, or the size differs, or the type differs, then 400 naming the field and nothing is registered', async () => {
    const conversation = await createConversation(t, acme)
    const bytes = png(8)
    const signed = await upload(acme, bytes)
    const never = created(await t.http().post('/storage-url-signing').set(acme.key)
      .send({ type: 'conversation-file', file_name: 'x.png', content_type: 'image/png', file_size: 10 }), 'unused signature')
    const body = { conversation_id: conversation.id, storage_key: signed.storage_key, file_name: 'photo.png', file_type: 'image/png', file_size: bytes.length }
    const missing = await register(acme, { ...body, storage_key: never.storage_key, file_size: 10 })
    expect(missing.body.errors).toEqual({ storage_key: 'has no uploaded file: PUT the file to the signed upload_url first' })
    const size = await register(acme, { ...body, file_size: bytes.length + 1 })
    expect(size.body.errors).toEqual({ storage_key: `holds ${bytes.length} bytes, not file_size ${bytes.length + 1}` })
    const type = await register(acme, { ...body, file_type: 'application/pdf' })
    expect(type.body.errors).toEqual({ file_type: 'must be image/png, the type the upload was signed for' })
    const traversal = await register(acme, { ...body, storage_key: `${acme.organization.id}/conversations/../../etc/passwd.png` })
    expect(Object.keys(traversal.body.errors)).toEqual(['storage_key'])
    const count = await t.http().get('/conversation-files').set(acme.key).send({ query: { conversation_id: conversation.id } })
    expect(count.body.total).toBe(0)
  })

  it('when the same upload is registered twice, then 409 and one row', async () => {
    const conversation = await createConversation(t, acme)
    const bytes = png(9)
    const signed = await upload(acme, bytes)
    const body = { conversation_id: conversation.id, storage_key: signed.storage_key, file_name: 'a.png', file_type: 'image/png', file_size: bytes.length }
    created(await register(acme, body), 'first')
    expect((await register(acme, body)).status).toBe(409)
  })

  it("when another organization's upload, conversation or file is used, then 400 naming the field; by id 404; naming it 403", async () => {
    const mine = await createConversation(t, acme)
    const theirs = await createConversation(t, globex)
    const bytes = png(10)
    const theirUpload = await upload(globex, bytes)
    const myUpload = await upload(acme, bytes)
    const foreignKey = await register(acme, { conversation_id: mine.id, storage_key: theirUpload.storage_key, file_name: 'x.png', file_type: 'image/png', file_size: bytes.length })
    expect(foreignKey.body.errors).toEqual({ storage_key: 'must be a key signed for this organization with type conversation-file' })
    const foreignConversation = await register(acme, { conversation_id: theirs.id, storage_key: myUpload.storage_key, file_name: 'x.png', file_type: 'image/png', file_size: bytes.length })
    expect(foreignConversation.body.errors).toEqual({ conversation_id: 'must be a conversation of this organization' })

    const theirFile = created(await register(globex, { conversation_id: theirs.id, storage_key: theirUpload.storage_key, file_name: 'x.png', file_type: 'image/png', file_size: bytes.length }), 'their file')
    expect((await t.http().get(`/conversation-files/${theirFile.id}`).set(acme.key)).status).toBe(404)
    expect((await t.http().get('/conversation-files').set(acme.key).query({ organization_id: globex.organization.id })).status).toBe(403)
    const attach = await t.http().post('/conversation-messages-playground').set(acme.key).send({ conversation_id: mine.id, file_ids: [theirFile.id] })
    expect(attach.body.errors).toEqual({ file_ids: `must be files of this conversation (not: ${theirFile.id})` })

    const otherConversation = await createConversation(t, acme)
    const mineFile = created(await register(acme, { conversation_id: otherConversation.id, storage_key: myUpload.storage_key, file_name: 'x.png', file_type: 'image/png', file_size: bytes.length }), 'my file')
    const elsewhere = await t.http().post('/conversation-messages-playground').set(acme.key).send({ conversation_id: mine.id, file_ids: [mineFile.id] })
    expect(elsewhere.body.errors).toEqual({ file_ids: `must be files of this conversation (not: ${mineFile.id})` })
  })
})
