import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { describe, it, expect, beforeAll } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import { eventually } from '../helpers/process.js'
import type { Tenant } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import { png } from '../storage/fixtures.js'
import { useApp } from '../helpers/use-app.js'
import { MAX_BYTES, localDisk, s3Backend, sleep, useMediaApp } from './product-media-fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe.each([localDisk, s3Backend()])('product media on $name: signed URLs, authentication, organizations', (backend) => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let productId: number
  let globexProductId: number
  const { upload } = useMediaApp(backend, (world) => ({ t, acme, globex, productId, globexProductId } = world))

  describe('signed upload URLs', () => {
    const sign = (tenant: Tenant, body: Record<string, unknown>) => t.http().post('/storage-url-signing').set(tenant.key).send(body)

    it('when a URL is signed and the file PUT to it, then the file reads back at public_url', async () => {
      const bytes = png(51)
      const res = await sign(acme, { type: 'reservation-service-image', file_name: 'haircut.png', content_type: 'image/png', file_size: bytes.length })
      expect(res.status).toBe(201)
      expect(res.body).toEqual({
        upload_url: expect.stringMatching(/^https?:\/\//),
        method: 'PUT',
        headers: { 'Content-Type': 'image/png' },
        public_url: expect.stringMatching(/^https?:\/\//),
        storage_key: expect.stringMatching(new RegExp(`^${acme.organization.id}/reservation-services/[A-Za-z0-9_-]+\\.png$`)),
        expires_at: expect.stringMatching(ISO_MS)
      })
      expect((await backend.read(t, res.body.public_url)).status).toBe(404)
      expect(await backend.put(t, res.body.upload_url, res.body.headers, bytes)).toBe(200)
      // s3rver answers a PUT once it has read the body, before its file stream has written it all
      // (FilesystemStore.putObject), so a read at once can see part of the file: read until whole.
      let stored = await backend.read(t, res.body.public_url)
      await eventually(async () => (stored = await backend.read(t, res.body.public_url)).body.equals(bytes), 2_000)
      expect(stored.status).toBe(200)
      expect(stored.body.equals(bytes)).toBe(true)
    })

    it('when the content type or the size is not allowed, then 400 naming the field', async () => {
      const html = await sign(acme, { type: 'booking-link-logo', file_name: 'x.html', content_type: 'text/html', file_size: 10 })
      expect(html.status).toBe(400)
      expect(html.body.errors).toHaveProperty('content_type')
      const video = await sign(acme, { type: 'booking-link-cover', file_name: 'x.mp4', content_type: 'video/mp4', file_size: 10 })
      expect(video.status).toBe(400)
      const big = await sign(acme, { type: 'product-media', file_name: 'x.png', content_type: 'image/png', file_size: MAX_BYTES + 1 })
      expect(big.status).toBe(400)
      expect(big.body.errors).toEqual({ file_size: `must be at most ${MAX_BYTES} bytes` })
      const unknownType = await sign(acme, { type: 'avatar', file_name: 'x.png', content_type: 'image/png', file_size: 10 })
      expect(unknownType.status).toBe(400)
    })

    it('when a signed URL has expired, then the PUT is refused with 403 and nothing is stored', async () => {
      const storage = t.app.get('storage')
      const bytes = png(52)
      const key = `${acme.organization.id}/booking-links/expired-${Date.now()}.png`
      const signed = await storage.signUpload({ key, contentType: 'image/png', size: bytes.length, expiresAt: new Date(Date.now() + 1000) })
      await sleep(2100)
      expect(await backend.put(t, signed.url, signed.headers, bytes)).toBe(403)
      expect((await backend.read(t, storage.publicUrl(key))).status).toBe(404)
    })

    if (backend.name === 'S3 (s3rver)') {
      it('when a URL is presigned for S3, then content type and length are part of the signature', async () => {
        const res = await sign(acme, { type: 'conversation-file', file_name: 'a.pdf', content_type: 'application/pdf', file_size: 1234 })
        expect(res.status).toBe(201)
        expect(new URL(res.body.upload_url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host')
      })
    }

    if (backend.name === 'local disk') {
      it('when a signed local URL is tampered with, then 403 and nothing is stored', async () => {
        const bytes = png(53)
        const res = await sign(acme, { type: 'booking-link-logo', file_name: 'logo.png', content_type: 'image/png', file_size: bytes.length })
        const url = new URL(res.body.upload_url)
        const bigger = new URL(url)
        bigger.searchParams.set('size', String(MAX_BYTES))
        expect(await backend.put(t, bigger.toString(), res.body.headers, bytes)).toBe(403)
        const otherKey = new URL(url)
        otherKey.pathname = otherKey.pathname.replace(/[^/]+\.png$/, 'chosen-by-client.png')
        expect(await backend.put(t, otherKey.toString(), res.body.headers, bytes)).toBe(403)
        const forged = new URL(url)
        forged.searchParams.set('signature', 'A'.repeat(43))
        expect(await backend.put(t, forged.toString(), res.body.headers, bytes)).toBe(403)
        expect((await backend.read(t, res.body.public_url)).status).toBe(404)
      })

      it('when a signed local URL is used twice, with another type or with more bytes, then only one matching PUT is stored', async () => {
        const bytes = png(54)
        const res = await sign(acme, { type: 'booking-link-cover', file_name: 'cover.png', content_type: 'image/png', file_size: bytes.length })
        expect(await backend.put(t, res.body.upload_url, { 'Content-Type': 'image/gif' }, bytes)).toBe(403)
        expect(await backend.put(t, res.body.upload_url, res.body.headers, Buffer.concat([bytes, Buffer.alloc(10)]))).toBe(413)
        expect(await backend.put(t, res.body.upload_url, res.body.headers, Buffer.from('not a png, though declared so'))).toBe(400)
        expect(await backend.put(t, res.body.upload_url, res.body.headers, bytes)).toBe(200)
        expect(await backend.put(t, res.body.upload_url, res.body.headers, png(55).subarray(0, bytes.length))).toBe(403)
        expect((await backend.read(t, res.body.public_url)).body.equals(bytes)).toBe(true)
      })

      it('when a path outside the media folder is asked for, then 404', async () => {
        expect((await t.http().get('/media/..%2F..%2Fauth-secret.png')).status).toBe(404)
        expect((await t.http().get('/media/%E0%A4%A.png')).status).toBe(404)
      })
    }
  })

  it('when the OpenAPI document is read, then the upload is multipart/form-data and reorder and signing are listed', async () => {
    const document = (await t.http().get('/openapi.json')).body
    expect(Object.keys(document.paths['/product-media'].post.requestBody.content)).toEqual(['multipart/form-data'])
    expect(document.components.schemas.ProductMediaUpload.properties.file).toMatchObject({ type: 'string', format: 'binary' })
    expect(document.paths['/product-media/reorder'].post).toBeDefined()
    expect(document.paths['/storage-url-signing'].post).toBeDefined()
  })

  describe('authentication before the body', () => {
    /**
     * Sends the headers and the first bytes of a multipart upload that announces more, and waits
     * for the answer without ever finishing the body: only a server that decides before reading
     * the body can answer.
     */
    async function answerToUnfinishedUpload(headers: Record<string, string>) {
      const server = http.createServer(t.app.callback())
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const boundary = 'unfinished-upload-boundary'
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="product_id"\r\n\r\n${productId}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`)
      const announced = head.length + MAX_BYTES - 1000
      try {
        return await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
          const req = http.request({
            host: '127.0.0.1', port: (server.address() as AddressInfo).port, method: 'POST', path: '/product-media',
            headers: { ...headers, 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(announced) }
          }, (res) => {
            const chunks: Buffer[] = []
            res.on('data', (chunk) => chunks.push(chunk))
            res.on('end', () => {
              resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString()) })
              req.destroy()
            })
          })
          req.on('error', () => undefined)
          setTimeout(() => { req.destroy(); reject(new Error('no answer before the body was complete')) }, 3000)
          req.write(Buffer.concat([head, png(1).subarray(0, 200), Buffer.alloc(1000)]))
        })
      } finally {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
    }

    it.each([
      ['an invalid API key', { 'x-api-key': 'crm_invalid_0000000000000000000000000000000000000000000' }],
      ['an invalid bearer token', { Authorization: 'Bearer not.a.jwt' }],
      ['no credentials', {}]
    ])('when a large multipart upload carries %s, then 401 answers before the body is read and no temporary file is written', async (_label, headers) => {
      const stored = await backend.keys(t, String(acme.organization.id))
      const ownTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-test-tmp-'))
      const tmpdir = process.env.TMPDIR
      process.env.TMPDIR = ownTmp
      try {
        const answer = await answerToUnfinishedUpload(headers as Record<string, string>)
        expect(answer.status).toBe(401)
        expect(answer.body).toMatchObject({ name: 'NotAuthenticated', code: 401, className: 'not-authenticated' })
        if ('x-api-key' in headers || Object.keys(headers).length === 0) expect(answer.body.message).toBe('Invalid API key')
        expect(answer.headers.connection).toBe('close')
        expect(fs.readdirSync(ownTmp)).toEqual([])
      } finally {
        if (tmpdir === undefined) delete process.env.TMPDIR
        else process.env.TMPDIR = tmpdir
        fs.rmSync(ownTmp, { recursive: true, force: true })
      }
      // Nothing stored either (storage keys are random ids, never the client's file name).
      expect((await backend.keys(t, String(acme.organization.id))).sort()).toEqual([...stored].sort())
    })

    it('when an upload is made with an API key, then the rate limit counts it once; with a bearer token it is stored too', async () => {
      const remaining = async (res: { headers: Record<string, string> }) => Number(res.headers['ratelimit-remaining'])
      const before = await remaining(await t.http().get('/products').set(acme.key))
      const uploaded = await upload(acme, { product_id: productId }, png(81))
      expect(uploaded.status).toBe(201)
      expect(await remaining(uploaded)).toBe(before - 1)
      expect(await remaining(await t.http().get('/products').set(acme.key))).toBe(before - 2)
      const byBearer = await t.http().post('/product-media').set(acme.bearer).field('organization_id', String(acme.organization.id))
        .field('product_id', String(productId)).attach('file', png(82), 'bearer.png')
      expect(byBearer.status, JSON.stringify(byBearer.body)).toBe(201)
      expect((await t.http().get(`/product-media/${byBearer.body.id}`).set(acme.key)).body.file_name).toBe('bearer.png')
      const crossTenant = await t.http().post('/product-media').set(globex.key).field('organization_id', String(acme.organization.id))
        .field('product_id', String(productId)).attach('file', png(83), 'theirs.png')
      expect(crossTenant.status).toBe(403)
    })
  })

  describe('across organizations', () => {
    let acmeItem: any

    beforeAll(async () => {
      acmeItem = (await upload(acme, { product_id: productId }, png(61))).body
    })

    it('when another organization reads, patches or deletes an item by id, then 404', async () => {
      const message = `No record found for id '${acmeItem.id}'`
      const read = await t.http().get(`/product-media/${acmeItem.id}`).set(globex.key)
      expect(read.status).toBe(404)
      expect(read.body.message).toBe(message)
      expect((await t.http().patch(`/product-media/${acmeItem.id}`).set(globex.key).send({ position: 5 })).status).toBe(404)
      expect((await t.http().delete(`/product-media/${acmeItem.id}`).set(globex.key)).status).toBe(404)
      const still = await t.http().get(`/product-media/${acmeItem.id}`).set(acme.key)
      expect(still.body).toMatchObject({ position: acmeItem.position, deleted_at: null })
    })

    it('when another organization lists, uploads or reorders in this organization by organization_id, then 403', async () => {
      const list = await t.http().get('/product-media').set(globex.key).query({ organization_id: acme.organization.id })
      expect(list.status).toBe(403)
      const created = await upload(globex, { organization_id: acme.organization.id, product_id: productId }, png(62))
      expect(created.status).toBe(403)
      const reorder = await t.http().post('/product-media/reorder').set(globex.key)
        .send({ organization_id: acme.organization.id, product_id: productId, positions: [{ id: acmeItem.id, position: 0 }] })
      expect(reorder.status).toBe(403)
      const signing = await t.http().post('/storage-url-signing').set(globex.key)
        .send({ organization_id: acme.organization.id, type: 'product-media', file_name: 'a.png', content_type: 'image/png', file_size: 10 })
      expect(signing.status).toBe(403)
    })

    it('when a body names a product of another organization, then 400 and nothing is stored', async () => {
      const created = await upload(acme, { product_id: globexProductId }, png(63))
      expect(created.status).toBe(400)
      expect(created.body.errors).toEqual({ product_id: 'must be a product of this organization' })
      expect(await backend.keys(t, `${acme.organization.id}/${globexProductId}`)).toEqual([])
      const reorder = await t.http().post('/product-media/reorder').set(globex.key)
        .send({ product_id: productId, positions: [{ id: acmeItem.id, position: 0 }] })
      expect(reorder.status).toBe(400)
      expect(reorder.body.errors).toEqual({ product_id: 'must be a product of this organization' })
    })

    it('when the request carries no credentials, then 401', async () => {
      const res = await t.http().post('/product-media').field('product_id', String(productId)).attach('file', png(64), 'a.png')
      expect(res.status).toBe(401)
    })
  })
})

describe('background purge', () => {
  let t: TestApp
  let acme: Tenant

  useApp({ tenants: ['Acme'], config: { uploadMaxBytes: MAX_BYTES, mediaPurgeGraceS: 0.2, mediaPurgeIntervalS: 0.1 } as Partial<Configuration> }, (app) => ({ t, tenants: [acme] } = app))

  it('when the app runs, then deleted items are purged without anyone calling the purge', async () => {
    const [product] = await t.db('products').insert({ organization_id: acme.organization.id, name: 'Background' }).returning('id')
    const created = await t.http().post('/product-media').set(acme.key).field('product_id', String(product.id)).attach('file', png(71), 'bg.png')
    expect(created.status).toBe(201)
    const pathname = new URL(created.body.storage_path).pathname
    expect((await t.http().get(pathname)).status).toBe(200)
    await t.http().delete(`/product-media/${created.body.id}`).set(acme.key).expect(200)

    const purgedAt = async () => (await t.db('product_media').where({ id: created.body.id }).first()).purged_at
    for (let attempt = 0; attempt < 50 && (await purgedAt()) === null; attempt++) await sleep(100)
    expect(await purgedAt()).not.toBeNull()
    expect((await t.http().get(pathname)).status).toBe(404)
  })
})
