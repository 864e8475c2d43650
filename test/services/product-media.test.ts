import { describe, it, expect, beforeAll } from 'vitest'
import type { TestApp } from '../helpers/app.js'
import type { Tenant } from '../helpers/fixtures.js'
import { png, pngOfSize } from '../storage/fixtures.js'
import { GRACE_S, MAX_BYTES, localDisk, s3Backend, sleep, useMediaApp } from './product-media-fixtures.js'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe.each([localDisk, s3Backend()])('product media on $name', (backend) => {
  let t: TestApp
  let acme: Tenant
  let globex: Tenant
  let productId: number
  let globexProductId: number
  const { newProduct, upload, purgePass } = useMediaApp(backend, (world) => ({ t, acme, globex, productId, globexProductId } = world))

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
})
