import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import S3rver from 's3rver'
import type { S3Settings } from '../../src/storage/s3.js'

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

const crc32 = (bytes: Buffer) => {
  let c = 0xffffffff
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Buffer) => {
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/** A real, valid PNG of width × height pixels of one colour; the seed changes the colour and so the bytes. */
export function png(seed = 1, width = 4, height = 4): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8) // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, seed % 256)])
  const pixels = zlib.deflateSync(Buffer.concat(Array.from({ length: height }, () => row)), { level: 0 })
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0))
  ])
}

/** A PNG padded with an ancillary chunk to about `bytes` bytes (still a valid PNG). */
export function pngOfSize(bytes: number): Buffer {
  const base = png(7)
  const padding = Math.max(0, bytes - base.length - 12)
  const iend = base.subarray(base.length - 12)
  return Buffer.concat([base.subarray(0, base.length - 12), chunk('tEXt', Buffer.alloc(padding, 0x61)), iend])
}

export const BUCKET = 'crm-media-test'

/** A real S3-protocol server (s3rver) on loopback with one bucket, for the S3 adapter. */
export async function startS3(): Promise<{ settings: S3Settings; close: () => Promise<void> }> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-s3rver-'))
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: BUCKET }]
  })
  const { port } = await server.run()
  return {
    settings: {
      bucket: BUCKET,
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
      publicUrl: ''
    },
    close: async () => {
      await server.close()
      fs.rmSync(directory, { recursive: true, force: true })
    }
  }
}
