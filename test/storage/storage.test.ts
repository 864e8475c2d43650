import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { LocalStorage } from '../../src/storage/local.js'
import { S3Storage } from '../../src/storage/s3.js'
import type { S3Settings } from '../../src/storage/s3.js'
import type { Storage } from '../../src/storage/storage.js'
import { png, startS3 } from './fixtures.js'

const read = async (url: string) => {
  const res = await fetch(url)
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
}

describe('S3 adapter against s3rver on loopback', () => {
  let s3: Awaited<ReturnType<typeof startS3>>
  let storage: S3Storage

  beforeAll(async () => {
    s3 = await startS3()
    storage = new S3Storage(s3.settings)
  })
  afterAll(async () => {
    await s3.close()
  })

  it('when an object is put, then it reads back at its public URL with identical bytes, and is gone once deleted', async () => {
    const bytes = png(3)
    await storage.put('9/1/abc.png', Readable.from(bytes), { contentType: 'image/png', size: bytes.length })
    const stored = await read(storage.publicUrl('9/1/abc.png'))
    expect(stored.status).toBe(200)
    expect(stored.body.equals(bytes)).toBe(true)
    await storage.delete('9/1/abc.png')
    expect((await read(storage.publicUrl('9/1/abc.png'))).status).toBe(404)
  })

  it('when an absent object is deleted, then that is not an error (the purge may retry)', async () => {
    await expect(storage.delete('9/1/never-stored.png')).resolves.toBeUndefined()
  })

  it('when a presigned PUT is used, then the object reads back', async () => {
    const bytes = png(4)
    const signed = await storage.signUpload({ key: '9/x/signed.png', contentType: 'image/png', size: bytes.length, expiresAt: new Date(Date.now() + 60_000) })
    const put = await fetch(signed.url, { method: 'PUT', headers: signed.headers, body: new Uint8Array(bytes) })
    expect(put.status).toBe(200)
    expect((await read(storage.publicUrl('9/x/signed.png'))).body.equals(bytes)).toBe(true)
  })
})

describe('S3 public URLs', () => {
  const settings: S3Settings = { bucket: 'media', region: 'eu-west-1', endpoint: '', accessKeyId: 'k', secretAccessKey: 's', forcePathStyle: false, publicUrl: '' }

  it.each([
    [{}, 'https://media.s3.eu-west-1.amazonaws.com/1/2/a b.png'.replace(' ', '%20')],
    [{ endpoint: 'http://127.0.0.1:9000', forcePathStyle: true }, 'http://127.0.0.1:9000/media/1/2/a%20b.png'],
    [{ endpoint: 'https://r2.example.com' }, 'https://media.r2.example.com/1/2/a%20b.png'],
    [{ endpoint: 'https://r2.example.com', publicUrl: 'https://cdn.example.com/' }, 'https://cdn.example.com/1/2/a%20b.png']
  ])('when the settings are %j, then the public URL is %s', (overrides, expected) => {
    expect(new S3Storage({ ...settings, ...overrides }).publicUrl('1/2/a b.png')).toBe(expected)
  })
})

describe('local adapter', () => {
  let root: string
  let storage: Storage

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-local-storage-'))
    storage = new LocalStorage(root, 'http://files.example/', crypto.randomBytes(32))
  })
  afterAll(() => {
    fs.rmSync(root, { recursive: true, force: true })
  })

  it('when an object is put, then it is a file under the root with identical bytes, and deleting twice is fine', async () => {
    const bytes = png(5)
    await storage.put('4/2/k.png', Readable.from(bytes), { contentType: 'image/png', size: bytes.length })
    expect(fs.readFileSync(path.join(root, '4', '2', 'k.png')).equals(bytes)).toBe(true)
    expect(storage.publicUrl('4/2/k.png')).toBe('http://files.example/media/4/2/k.png')
    await storage.delete('4/2/k.png')
    await storage.delete('4/2/k.png')
    expect(fs.existsSync(path.join(root, '4', '2', 'k.png'))).toBe(false)
  })

  it.each(['4/2/-starts-with-dash.png', '4/2/_underscore.png', '4/product-media/Ab_-9.webp'])(
    'when the key is %s (nanoid ids may start with - or _), then it is stored',
    async (key) => {
      await storage.put(key, Readable.from(png(6)), { contentType: 'image/png', size: png(6).length })
      expect(fs.existsSync(path.join(root, ...key.split('/')))).toBe(true)
    }
  )

  it.each(['../escape.png', '4/../../escape.png', '/etc/passwd.png', '4/2/no-extension', '4//2/a.png'])(
    'when the key is %s, then it is refused before touching the disk',
    async (key) => {
      await expect(storage.put(key, Readable.from(Buffer.from('x')), { contentType: 'image/png', size: 1 })).rejects.toMatchObject({ code: 400 })
    }
  )
})
