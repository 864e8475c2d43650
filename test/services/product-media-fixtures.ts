import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import type { TestApp } from '../helpers/app.js'
import { useApp } from '../helpers/use-app.js'
import type { Tenant } from '../helpers/fixtures.js'
import type { Configuration } from '../../src/declarations.js'
import type { S3Storage } from '../../src/storage/s3.js'
import { startS3 } from '../storage/fixtures.js'

export const MAX_BYTES = 50_000
export const GRACE_S = 1

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const collectBinary = (res: any, callback: (error: Error | null, body: Buffer) => void) => {
  const chunks: Buffer[] = []
  res.on('data', (chunk: Buffer) => chunks.push(chunk))
  res.on('end', () => callback(null, Buffer.concat(chunks)))
}

/** How a test reads and lists what the storage holds, through its real interface. */
export interface Backend {
  name: 'local disk' | 'S3 (s3rver)'
  start(): Promise<Partial<Configuration>>
  stop(): Promise<void>
  read(t: TestApp, url: string): Promise<{ status: number; type: string | null; body: Buffer }>
  keys(t: TestApp, prefix: string): Promise<string[]>
  put(t: TestApp, url: string, headers: Record<string, string>, body: Buffer): Promise<number>
}

export const localDisk: Backend = {
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

export function s3Backend(): Backend {
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


export interface MediaWorld {
  t: TestApp
  acme: Tenant
  globex: Tenant
  productId: number
  globexProductId: number
}

/**
 * The set-up of the product media tests on one storage backend: an app storing there, with small
 * uploads, a grace period of GRACE_S and no background purge, Acme and Globex with a product
 * each; `ready` receives them once they exist. upload() posts a file, purgePass() runs one purge.
 */
export function useMediaApp(backend: Backend, ready: (world: MediaWorld) => void) {
  const world = {} as MediaWorld
  let storage: Partial<Configuration> = {}
  beforeAll(async () => {
    storage = await backend.start()
  })
  afterAll(async () => {
    await backend.stop()
  })
  useApp({
    tenants: ['Acme', 'Globex'],
    config: () => ({ ...storage, uploadMaxBytes: MAX_BYTES, mediaPurgeGraceS: GRACE_S, mediaPurgeIntervalS: 0 }) as Partial<Configuration>
  }, (app) => {
    world.t = app.t
    ;[world.acme, world.globex] = app.tenants
  })
  beforeAll(async () => {
    world.productId = await newProduct(world.acme, 'Espresso machine')
    world.globexProductId = await newProduct(world.globex, 'Globex gadget')
    ready(world)
  })

  async function newProduct(tenant: Tenant, name: string): Promise<number> {
    const [row] = await world.t.db('products').insert({ organization_id: tenant.organization.id, name }).returning('id')
    return row.id
  }

  const upload = (tenant: Tenant, fields: Record<string, string | number>, file: Buffer, fileName = 'photo.png', contentType = 'image/png') => {
    const request = world.t.http().post('/product-media').set(tenant.key)
    for (const [name, value] of Object.entries(fields)) request.field(name, String(value))
    return request.attach('file', file, { filename: fileName, contentType })
  }

  const purgePass = () => world.t.app.service('product-media').purgeDeleted()

  return { newProduct, upload, purgePass }
}
