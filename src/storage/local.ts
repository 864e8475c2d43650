import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BadRequest, Forbidden, NotFound } from '@feathersjs/errors'
import type { Context, Next } from 'koa'
import { encodeKey, isPrivateKey, isValidKey, typeOfExtension } from './storage.js'
import type { SignedUpload, Storage, UploadGrant } from './storage.js'
import { receiveToFile, tooLarge, detectFileType } from './receive.js'

export const LOCAL_ROUTE = '/media'

const INVALID_SIGNATURE = 'The upload URL is invalid or has expired'
// Most images are small: read them in one go; larger files are streamed.
const READ_WHOLE_BYTES = 1024 * 1024

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/**
 * Files on local disk under `root` (DATA_DIR/media), served by this service at /media/<key>.
 * Signed uploads are HMAC-signed, expiring URLs on the same path that accept one PUT.
 */
export class LocalStorage implements Storage {
  readonly kind = 'local' as const
  private incoming: string

  constructor(
    readonly root: string,
    private baseUrl: string,
    private secret: Buffer
  ) {
    this.incoming = path.join(root, '.incoming')
  }

  private fileOf(key: string) {
    if (!isValidKey(key)) throw new BadRequest('Invalid storage key')
    return path.join(this.root, ...key.split('/'))
  }

  private temporaryFile() {
    fs.mkdirSync(this.incoming, { recursive: true })
    return path.join(this.incoming, crypto.randomUUID())
  }

  /** Written to a temporary file first and renamed, so a reader never sees half a file. */
  async put(key: string, body: Readable, _options: { contentType: string; size: number }) {
    const target = this.fileOf(key)
    const temporary = this.temporaryFile()
    try {
      await pipeline(body, fs.createWriteStream(temporary, { flags: 'wx' }))
      await fs.promises.mkdir(path.dirname(target), { recursive: true })
      await fs.promises.rename(temporary, target)
    } finally {
      await fs.promises.rm(temporary, { force: true })
    }
  }

  async size(key: string) {
    const stat = await fs.promises.stat(this.fileOf(key)).catch(() => undefined)
    return stat?.isFile() ? stat.size : undefined
  }

  async read(key: string) {
    const file = this.fileOf(key)
    await fs.promises.access(file)
    return fs.createReadStream(file)
  }

  async delete(key: string) {
    await fs.promises.rm(this.fileOf(key), { force: true })
  }

  publicUrl(key: string) {
    return `${this.baseUrl.replace(/\/+$/, '')}${LOCAL_ROUTE}/${encodeKey(key)}`
  }

  /** Files on local disk are served at their public URL, whose key is random and never reused: that URL is the link. */
  async signDownload(key: string, _expiresAt: Date) {
    return this.publicUrl(key)
  }

  async signUpload(grant: UploadGrant): Promise<SignedUpload> {
    const expires = Math.floor(grant.expiresAt.getTime() / 1000)
    const query = new URLSearchParams({
      expires: String(expires),
      size: String(grant.size),
      type: grant.contentType,
      signature: this.signature(grant.key, grant.contentType, grant.size, expires)
    })
    return { url: `${this.publicUrl(grant.key)}?${query}`, headers: { 'Content-Type': grant.contentType } }
  }

  private signature(key: string, contentType: string, size: number, expires: number) {
    return crypto.createHmac('sha256', this.secret).update(['PUT', key, contentType, size, expires].join('\n')).digest('base64url')
  }

  /** The grant a signed URL carries; 403 when the signature does not match or the URL has expired. */
  verify(key: string, query: Record<string, unknown>): UploadGrant {
    const { expires, size, type, signature } = query
    if (typeof expires !== 'string' || typeof size !== 'string' || typeof type !== 'string' || typeof signature !== 'string') {
      throw new Forbidden(INVALID_SIGNATURE)
    }
    const expected = Buffer.from(this.signature(key, type, Number(size), Number(expires)))
    const given = Buffer.from(signature)
    if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) throw new Forbidden(INVALID_SIGNATURE)
    if (Number(expires) * 1000 <= Date.now()) throw new Forbidden(INVALID_SIGNATURE)
    return { key, contentType: type, size: Number(size), expiresAt: new Date(Number(expires) * 1000) }
  }

  /**
   * One PUT on a signed URL: at most the signed size, of the signed content type (checked on
   * the header and on the bytes). The file is linked into place only if none exists yet, so a
   * URL stores one file however many times (or however concurrently) it is used.
   */
  async receiveSignedUpload(ctx: Context, key: string) {
    const grant = this.verify(key, ctx.query)
    if (ctx.request.type !== grant.contentType) {
      throw new Forbidden(`The upload must be sent with Content-Type: ${grant.contentType}`)
    }
    if (Number(ctx.get('content-length') || 0) > grant.size) throw tooLarge(grant.size)
    const target = this.fileOf(key)
    if (fs.existsSync(target)) throw new Forbidden('This upload URL has already been used')
    const temporary = this.temporaryFile()
    try {
      const { size, truncated } = await receiveToFile(ctx.req, temporary, grant.size)
      if (truncated) throw tooLarge(grant.size)
      const detected = await detectFileType(temporary)
      if (detected?.mime !== grant.contentType) {
        throw new BadRequest(`The content is not ${grant.contentType}`, { errors: { file: `must be ${grant.contentType}` } })
      }
      await fs.promises.mkdir(path.dirname(target), { recursive: true })
      await fs.promises.link(temporary, target).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EEXIST') throw new Forbidden('This upload URL has already been used')
        throw error
      })
      return { storage_key: key, public_url: this.publicUrl(key), file_size: size, file_type: detected.mime }
    } finally {
      await fs.promises.rm(temporary, { force: true })
    }
  }

  /** Koa middleware: GET/HEAD /media/<key> reads a file, PUT /media/<key>?<signature> stores one. */
  routes() {
    return async (ctx: Context, next: Next) => {
      if (!ctx.path.startsWith(`${LOCAL_ROUTE}/`)) return next()
      const key = safeDecode(ctx.path.slice(LOCAL_ROUTE.length + 1))
      if (!key || !isValidKey(key) || isPrivateKey(key)) throw new NotFound('No file found at this path')
      if (ctx.method === 'PUT') {
        ctx.body = await this.receiveSignedUpload(ctx, key)
        return
      }
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next()
      const file = this.fileOf(key)
      const stat = await fs.promises.stat(file).catch(() => undefined)
      if (!stat?.isFile()) throw new NotFound('No file found at this path')
      ctx.type = typeOfExtension(key)
      ctx.length = stat.size
      ctx.set('X-Content-Type-Options', 'nosniff')
      // Keys are random and never reused, so a file at a key never changes.
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable')
      if (ctx.method === 'HEAD') ctx.status = 200
      else ctx.body = stat.size <= READ_WHOLE_BYTES ? await fs.promises.readFile(file) : fs.createReadStream(file)
    }
  }
}
