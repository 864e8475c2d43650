import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import type { Tenant } from '../helpers/fixtures.js'
import { createConversation } from '../conversations/fixtures.js'
import { png, startS3 } from '../storage/fixtures.js'
import { attachFile, settlePurges } from './fixtures.js'

describe('personal data with files on S3', () => {
  let s3: Awaited<ReturnType<typeof startS3>>
  let t: TestApp
  let acme: Tenant

  beforeAll(async () => {
    s3 = await startS3()
    t = await startApp({ s3: s3.settings })
    acme = await createTenant(t, 'Acme')
  })
  afterAll(async () => {
    await t.close()
    await s3.close()
  })

  it('when a person with a file on S3 is exported, then the file downloads from a presigned link; once they are erased, the object is gone from the bucket', async () => {
    const conversation = await createConversation(t, acme)
    const file = await attachFile(t, acme, conversation.id, 31)
    const exported = await t.http().post(`/contacts/${conversation.contact_id}`).set(acme.key).set('X-Service-Method', 'export-personal-data').send({})
    expect(exported.status).toBe(200)
    const [linked] = JSON.parse(exported.text).conversations[0].files
    expect(linked.download_url).toMatch(/X-Amz-Signature=/)
    const download = await fetch(linked.download_url)
    expect(download.status).toBe(200)
    expect(Buffer.from(await download.arrayBuffer()).equals(png(31))).toBe(true)

    const storage = t.app.get('storage')
    expect(await storage.size(file.storage_key)).toBe(png(31).length)
    const erased = await t.http().post(`/contacts/${conversation.contact_id}`).set(acme.key).set('X-Service-Method', 'erase-personal-data')
      .send({ confirm: conversation.contact_id })
    expect(erased.status).toBe(200)
    expect(erased.body.removed.conversation_files).toBe(1)
    await settlePurges(t, acme.organization.id)
    expect(await storage.size(file.storage_key)).toBeUndefined()
    expect((await fetch(linked.download_url)).status).toBe(404)
  })
})
