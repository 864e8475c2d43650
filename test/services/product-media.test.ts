import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import { eventually } from '../helpers/process.js'
import type { Tenant } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import type { S3Storage } from '../../src/storage/s3.js'
import { png, pngOfSize, startS3 } from '../storage/fixtures.js'
import { useApp } from '../helpers/use-app.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const MAX_BYTES = 50_000
const GRACE_S = 1

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const collectBinary = (res: any, callback: (error: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = []
  res.on('data', (chunk: Buffer) => chunks.push(chunk))
  res.on('end', () => callback(null, Buffer.concat(chunks)))
}

/** How a test reads and lists what the storage holds, through its real interface. */
interface Backend {
  name: 'local disk' | 'S3 (s3rver)'
  start(): Promise<Partial<Configuration>>
  stop(): Promise<void>
  read(t: TestApp, url: string): Promise<{ status: number; type: string | null; body: Buffer }>
  keys(t: TestApp, prefix: string): Promise<string[]>
  put(t: TestApp, url: string, headers: Record<string, string>, body: Buffer): Promise<number>
}

const localDisk: Backend = {
  name: 'local disk',
  async start() {
    return {}
  },
  async stop() {},
  async read(t, url) {
    const res = await t.http().get(new URL(url).pathname).buffer(true).parse(collectBinary)
    return { status: res.status, type: res.headers['content-type'] ?? null, body: res.body as Buffer }
  },
  async keys(t, prefix) {
    const root = path.join(t.app.get('dataDir'), 'media')
    const directory = path.join(root, prefix)
    if (!fs.existsSync(directory)) return []
    return (fs.readdirSync(directory, { recursive: true }) as string[])
      .filter((entry) => fs.statSync(path.join(directory, entry)).isFile())
      .map((entry) => `${prefix}/${entry.split(path.sep).join('/')}`)
  },
  async put(t, url, headers, body) {
    const { pathname, search } = new URL(url)
    const res = await t.http().put(`${pathname}${search}`).set(headers).send(body)
    return res.status
  }
}

function s3Backend(): Backend {
  let close = async () => {}
  return {
    name: 'S3 (s3rver)',
    async start() {
      const s3 = await startS3()
      close = s3.close
      return { s3: s3.settings }
    },
    async stop() {
      await close()
    },
    async read(_t, url) {
      const res = await fetch(url)
      return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) }
    },
    async keys(t, prefix) {
      const storage = t.app.get('storage') as S3Storage
      const listed = await storage.client.send(new ListObjectsV2Command({ Bucket: t.app.get('s3').bucket, Prefix: `${prefix}/` }))
      return (listed.Contents ?? []).map((object) => object.Key!)
    },
    async put(_t, url, headers, body) {
      const res = await fetch(url, { method: 'PUT', headers, body: new Uint8Array(body) })
      return res.status
    }
  }
}

describe.each([localDisk, s3Backend()])('product media on $name', (backend) => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let productId: number
  let globexProductId: number

  beforeAll(async () => {
    const storage = await backend.start()
    t = await startApp({
      ...storage,
      uploadMaxBytes: MAX_BYTES,
      mediaPurgeGraceS: GRACE_S,
      mediaPurgeIntervalS: 0
    } as Partial<Configuration>)
    acme = await createTenant(t, 'Acme')
    globex = await createTenant(t, 'Globex')
    productId = await newProduct(acme, 'Espresso machine')
    globexProductId = await newProduct(globex, 'Globex gadget')
  })
  afterAll(async () => {
    await t.close()
    await backend.stop()
  })

  async function newProduct(tenant: Tenant, name: string): Promise<number> {
    const [row] = await t.db('products').insert({ organization_id: tenant.organization.id, name }).returning('id')
    return row.id
  }

  const upload = (tenant: Tenant, fields: Record<string, string | number>, file: Buffer, fileName = 'photo.png', contentType = 'image/png') => {
    const request = t.http().post('/product-media').set(tenant.key)
    for (const [name, value] of Object.entries(fields)) request.field(name, String(value))
    return request.attach('file', file, { filename: fileName, contentType })
  }

  const purgePass = () => t.app.service('product-media').purgeDeleted()

  describe('upload', () => {
    it('when a PNG is uploaded to a product, then 201 with the detected type and size, and the file reads back byte for byte', async () => {
      const bytes = png(11)
      const res = await upload(acme, { product_id: productId }, bytes, 'Front view.png')
      expect(res.status).toBe(201)
      expect(res.body).toEqual({
        id: expect.any(Number),
        product_id: productId,
        organization_id: acme.organization.id,
        file_name: 'Front view.png',
        file_type: 'image/png',
        file_size: bytes.length,
        file_path: expect.any(String),
        storage_key: expect.stringMatching(new RegExp(`^${acme.organization.id}/${productId}/[A-Za-z0-9_-]+\\.png$`)),
        storage_path: expect.stringMatching(/^https?:\/\//),
        position: expect.any(Number),
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        deleted_at: null,
        product: { id: productId, name: expect.any(String) }
      })
      expect(res.body.storage_path.endsWith(res.body.storage_key)).toBe(true)
      expect(res.body.file_path).toBe(new URL(res.body.storage_path).pathname)

      const stored = await backend.read(t, res.body.storage_path)
      expect(stored.status).toBe(200)
      expect(stored.type).toBe('image/png')
      expect(stored.body.equals(bytes)).toBe(true)

      const read = await t.http().get(`/product-media/${res.body.id}`).set(acme.key)
      expect(read.status).toBe(200)
      expect(read.body).toEqual({ ...res.body, product: { id: productId, name: 'Espresso machine' } })
    })

    it('when the client calls a file image/jpeg but the bytes are a PNG, then the type stored is the detected one', async () => {
      const res = await upload(acme, { product_id: productId }, png(12), 'lying.jpg', 'image/jpeg')
      expect(res.status).toBe(201)
      expect(res.body.file_type).toBe('image/png')
      expect(res.body.storage_key).toMatch(/\.png$/)
    })

    it('when a text file is named .png, then 400 with errors.file and nothing is stored', async () => {
      const product = await newProduct(acme, 'Text target')
      const res = await upload(acme, { product_id: product }, Buffer.from('just some text, not an image\n'), 'fake.png', 'image/png')
      expect(res.status).toBe(400)
      expect(res.body.message).toMatch(/Unsupported file type/)
      expect(res.body.errors.file).toMatch(/image\/png/)
      expect(await backend.keys(t, `${acme.organization.id}/${product}`)).toEqual([])
      expect(await t.db('product_media').where({ product_id: product })).toEqual([])
    })

    it('when the file is larger than UPLOAD_MAX_BYTES, then 413 with a clear message and nothing is stored', async () => {
      const product = await newProduct(acme, 'Too big target')
      const res = await upload(acme, { product_id: product }, pngOfSize(MAX_BYTES + 1), 'huge.png')
      expect(res.status).toBe(413)
      expect(res.body).toMatchObject({ code: 413, message: `The file is larger than the limit of ${MAX_BYTES} bytes`, errors: { file: `must be at most ${MAX_BYTES} bytes` } })
      expect(await backend.keys(t, `${acme.organization.id}/${product}`)).toEqual([])
      expect(await t.db('product_media').where({ product_id: product })).toEqual([])

      const atLimit = await upload(acme, { product_id: product }, pngOfSize(MAX_BYTES), 'just-fits.png')
      expect(atLimit.status).toBe(201)
      expect(atLimit.body.file_size).toBe(MAX_BYTES)
    })

    it('when no file is sent, then 400 with errors.file', async () => {
      const res = await t.http().post('/product-media').set(acme.key).field('product_id', String(productId))
      expect(res.status).toBe(400)
      expect(res.body.errors).toHaveProperty('file')
    })

    it('when the product does not exist, then 400 with errors.product_id', async () => {
      const res = await upload(acme, { product_id: 99_999_999 }, png(1))
      expect(res.status).toBe(400)
      expect(res.body.errors).toEqual({ product_id: 'must be a product of this organization' })
    })

    it('when the database write fails after the upload, then the stored object is removed', async () => {
      const product = await newProduct(acme, 'Refused by database')
      await t.db.raw(`ALTER TABLE product_media ADD CONSTRAINT product_media_test_refusal CHECK (file_name <> 'refused-by-database.png')`)
      try {
        const res = await upload(acme, { product_id: product }, png(13), 'refused-by-database.png')
        expect(res.status).toBe(400)
      } finally {
        await t.db.raw('ALTER TABLE product_media DROP CONSTRAINT product_media_test_refusal')
      }
      expect(await backend.keys(t, `${acme.organization.id}/${product}`)).toEqual([])
      expect(await t.db('product_media').where({ product_id: product })).toEqual([])
    })
  })

  describe('order', () => {
    let product: number
    let ids: number[]

    beforeAll(async () => {
      product = await newProduct(acme, 'Ordered product')
      ids = []
      for (const seed of [21, 22, 23]) {
        const res = await upload(acme, { product_id: product }, png(seed), `image-${seed}.png`)
        expect(res.body).toMatchObject({ id: expect.any(Number) })
        ids.push(res.body.id)
      }
    })

    const listed = async () => {
      const res = await t.http().get('/product-media').set(acme.key).query({ product_id: product })
      expect(res.status).toBe(200)
      return res.body
    }

    it('when positions are not given, then each upload goes after the last and the list is in position order', async () => {
      const page = await listed()
      expect(page).toMatchObject({ total: 3, limit: 10, skip: 0 })
      expect(page.data.map((item: any) => item.id)).toEqual(ids)
      expect(page.data.map((item: any) => item.position)).toEqual([0, 1, 2])
    })

    it('when items are reordered, then 200 {success, updated} and the list reads in the new order', async () => {
      const res = await t.http().post('/product-media/reorder').set(acme.key).send({
        product_id: product,
        positions: [{ id: ids[2], position: 0 }, { id: ids[0], position: 1 }, { id: ids[1], position: 2 }]
      })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true, updated: 3 })
      const page = await listed()
      expect(page.data.map((item: any) => item.id)).toEqual([ids[2], ids[0], ids[1]])
    })

    it('when a reorder names an item of another product, then 400 and no position changes', async () => {
      const other = await upload(acme, { product_id: productId }, png(24))
      const before = await listed()
      const res = await t.http().post('/product-media/reorder').set(acme.key).send({
        product_id: product,
        positions: [{ id: ids[0], position: 0 }, { id: ids[1], position: 1 }, { id: other.body.id, position: 2 }]
      })
      expect(res.status).toBe(400)
      expect(res.body.errors.positions).toContain(String(other.body.id))
      expect(await listed()).toEqual(before)
    })

    it('when a reorder names a deleted item, then 400 and nothing changes', async () => {
      const doomed = await upload(acme, { product_id: product }, png(25))
      await t.http().delete(`/product-media/${doomed.body.id}`).set(acme.key).expect(200)
      const before = await listed()
      const res = await t.http().post('/product-media/reorder').set(acme.key).send({
        product_id: product,
        positions: [{ id: ids[1], position: 0 }, { id: doomed.body.id, position: 1 }]
      })
      expect(res.status).toBe(400)
      expect(await listed()).toEqual(before)
    })

    it('when one item is patched with a position and a file name, then both change (the name sanitised)', async () => {
      const res = await t.http().patch(`/product-media/${ids[1]}`).set(acme.key).send({ position: 9, file_name: '../../etc/pass<wd>.png' })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ id: ids[1], position: 9, file_name: 'passwd.png' })
      const read = await t.http().get(`/product-media/${ids[1]}`).set(acme.key)
      expect(read.body).toMatchObject({ position: 9, file_name: 'passwd.png' })
    })

    it('when six uploads to one product run at once, then every item gets its own position — on a Postgres server (the .ci/run server run is the one that counts; embedded Postgres has one connection so it cannot fail there)', async () => {
      const racing = await newProduct(acme, 'Racing product')
      const results = await Promise.all([31, 32, 33, 34, 35, 36].map((seed) => upload(acme, { product_id: racing }, png(seed), `race-${seed}.png`)))
      expect(results.map((res) => res.status)).toEqual([201, 201, 201, 201, 201, 201])
      const page = await t.http().get('/product-media').set(acme.key).query({ product_id: racing })
      const positions = page.body.data.map((item: any) => item.position)
      expect(positions).toHaveLength(6)
      expect(new Set(positions).size).toBe(6)
    })

    it('when an upload, a patch or a reorder asks for a position another live item holds, then 409/400 naming position and nothing moves', async () => {
      const crowded = await newProduct(acme, 'Crowded product')
      const first = await upload(acme, { product_id: crowded }, png(41))
      const second = await upload(acme, { product_id: crowded }, png(42))
      expect([first.body.position, second.body.position]).toEqual([0, 1])
      const clash = await upload(acme, { product_id: crowded, position: 1 }, png(43))
      expect(clash.status).toBe(409)
      expect(clash.body).toMatchObject({ name: 'Conflict', errors: { position: 'is already taken' } })
      const patched = await t.http().patch(`/product-media/${first.body.id}`).set(acme.key).send({ position: 1 })
      expect(patched.status).toBe(409)
      expect(patched.body.errors).toEqual({ position: 'is already taken' })
      const reorder = await t.http().post('/product-media/reorder').set(acme.key).send({
        product_id: crowded, positions: [{ id: first.body.id, position: 5 }, { id: second.body.id, position: 5 }]
      })
      expect(reorder.status).toBe(400)
      expect(reorder.body.errors).toEqual({ positions: 'must give each item a different position' })
      const page = await t.http().get('/product-media').set(acme.key).query({ product_id: crowded })
      expect(page.body.data.map((item: any) => [item.id, item.position])).toEqual([[first.body.id, 0], [second.body.id, 1]])
      const swapped = await t.http().post('/product-media/reorder').set(acme.key).send({
        product_id: crowded, positions: [{ id: first.body.id, position: 1 }, { id: second.body.id, position: 0 }]
      })
      expect(swapped.status).toBe(200)
      const after = await t.http().get('/product-media').set(acme.key).query({ product_id: crowded })
      expect(after.body.data.map((item: any) => [item.id, item.position])).toEqual([[second.body.id, 0], [first.body.id, 1]])
      await t.http().delete(`/product-media/${first.body.id}`).set(acme.key).expect(200)
      const reused = await upload(acme, { product_id: crowded, position: 1 }, png(44))
      expect(reused.status, JSON.stringify(reused.body)).toBe(201)
    })

    it('when pages of 1 and of 3 items are listed, then each holds that many items of the product', async () => {
      const one = await t.http().get('/product-media').set(acme.key).query({ product_id: product, $limit: 1 })
      const three = await t.http().get('/product-media').set(acme.key).query({ product_id: product, $limit: 3 })
      expect(one.body.data).toHaveLength(1)
      expect(three.body.data).toHaveLength(3)
      expect(three.body.data.every((item: any) => item.product_id === product)).toBe(true)
    })

    it('when the list is filtered by file_type and limited, then the envelope says so', async () => {
      const res = await t.http().get('/product-media').set(acme.key).query({ product_id: product, file_type: 'image/png', $limit: 2 })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ total: 3, limit: 2, skip: 0 })
      expect(res.body.data).toHaveLength(2)
      const none = await t.http().get('/product-media').set(acme.key).query({ product_id: product, file_type: 'video/mp4' })
      expect(none.body.total).toBe(0)
    })
  })

  describe('delete and purge', () => {
    it('when an item is deleted, then it is returned with deleted_at, its file stays through the grace period and is purged once after', async () => {
      const created = await upload(acme, { product_id: productId }, png(31))
      const removed = await t.http().delete(`/product-media/${created.body.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      expect(removed.body.deleted_at).toMatch(ISO_MS)
      expect(removed.body.updated_at).toBe(removed.body.deleted_at)
      expect(removed.body).not.toHaveProperty('purged_at')
      expect((await t.http().get(`/product-media/${created.body.id}`).set(acme.key)).status).toBe(404)

      await purgePass()
      expect((await backend.read(t, created.body.storage_path)).status).toBe(200)

      await sleep(GRACE_S * 1000 + 200)
      await purgePass()
      expect((await backend.read(t, created.body.storage_path)).status).toBe(404)
      const row = await t.db('product_media').where({ id: created.body.id }).first()
      expect(row.purged_at).not.toBeNull()
      expect(row.deleted_at).not.toBeNull()
    })

    it('when a product is deleted, then its media are deleted at the same instant and their files are purged after the grace period', async () => {
      const product = await t.http().post('/products').set(acme.key).send({ name: 'Discontinued' })
      const items = []
      for (const seed of [61, 62]) items.push((await upload(acme, { product_id: product.body.id }, png(seed))).body)
      const removed = await t.http().delete(`/products/${product.body.id}`).set(acme.key)
      expect(removed.status).toBe(200)
      const rows = await t.db('product_media').whereIn('id', items.map((item) => item.id))
      for (const row of rows) expect(row.deleted_at.toISOString()).toBe(removed.body.deleted_at)
      const listed = await t.http().get('/product-media').set(acme.key).query({ product_id: product.body.id })
      expect(listed.body.total).toBe(0)
      await sleep(GRACE_S * 1000 + 200)
      await purgePass()
      for (const item of items) expect((await backend.read(t, item.storage_path)).status).toBe(404)
    })

    it('when several purge passes run at once, then every due file is purged by exactly one of them (proven on a Postgres server: the .ci/run server run counts; embedded Postgres has one connection, so races cannot happen there)', async () => {
      const created = []
      for (const seed of [41, 42, 43, 44]) created.push((await upload(acme, { product_id: productId }, png(seed))).body)
      for (const item of created) await t.http().delete(`/product-media/${item.id}`).set(acme.key).expect(200)
      await sleep(GRACE_S * 1000 + 200)
      const [{ due }] = await t.db('product_media')
        .whereNotNull('deleted_at').whereNull('purged_at')
        .whereRaw('deleted_at <= now() - make_interval(secs => ?)', [GRACE_S])
        .count({ due: '*' })
      expect(Number(due)).toBeGreaterThanOrEqual(4)

      const counts = await Promise.all([purgePass(), purgePass(), purgePass()])
      expect(counts.reduce((sum, n) => sum + n, 0)).toBe(Number(due))
      expect(await purgePass()).toBe(0)
      for (const item of created) expect((await backend.read(t, item.storage_path)).status).toBe(404)
    })
  })

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
