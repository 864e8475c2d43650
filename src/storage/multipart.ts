import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import busboy from 'busboy'
import { BadRequest } from '@feathersjs/errors'
import type { Context, Next } from 'koa'
import type { Application } from '../declarations.js'
import { authenticateBeforeBody } from '../hooks/authenticate.js'
import { receiveToFile, tooLarge } from './receive.js'

/** The file part of a multipart upload, received into a temporary file by the upload middleware. */
export interface UploadedFile {
  path: string
  /** The client's file name, sanitised; kept as file_name and never used for the storage key. */
  name: string
  size: number
}

declare module '@feathersjs/feathers' {
  interface Params {
    upload?: UploadedFile
  }
}

/** A name safe to store and to show: no directories, control characters or characters file systems reject. */
export function sanitizeFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? ''
  const cleaned = base
    .normalize('NFC')
    .replace(/[\u0000-\u001f\u007f<>:"|?*]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
  return (cleaned || 'file').slice(0, 200)
}

// Room for the multipart boundaries and text fields around the file.
const MULTIPART_OVERHEAD = 64 * 1024
const FILE_FIELD = 'file'
/** Temporary directories of uploads being received, under os.tmpdir(). */
export const UPLOAD_DIRECTORY_PREFIX = 'crm-upload-'

interface ParsedUpload {
  fields: Record<string, string>
  file?: UploadedFile
}

/** Reads a multipart body: text fields into an object, the one file into a temporary file of at most maxBytes. */
function parseMultipart(ctx: Context, directory: string, maxBytes: number): Promise<ParsedUpload> {
  return new Promise((resolve, reject) => {
    // No prototype: a field named __proto__ stays a plain (and then refused) field.
    const fields: Record<string, string> = Object.create(null)
    let file: UploadedFile | undefined
    let failure: Error | undefined
    let pending: Promise<void> = Promise.resolve()
    const fail = (error: Error) => {
      failure ??= error
    }
    let finished = false
    const finish = () => {
      if (finished) return
      finished = true
      pending.then(() => (failure ? reject(failure) : resolve({ fields, file })), reject)
    }

    let parser: busboy.Busboy
    try {
      parser = busboy({
        headers: ctx.req.headers,
        limits: { files: 1, fields: 20, fieldSize: 10_000, parts: 21 },
        defParamCharset: 'utf8'
      })
    } catch {
      reject(new BadRequest('Malformed multipart/form-data body'))
      return
    }
    parser.on('field', (name, value) => (fields[name] = value))
    parser.on('file', (name, stream, info) => {
      if (name !== FILE_FIELD) {
        fail(new BadRequest('Validation failed', { errors: { [name]: `is not allowed: send the file in the "${FILE_FIELD}" field` } }))
        stream.resume()
        return
      }
      const target = path.join(directory, 'upload')
      pending = receiveToFile(stream, target, maxBytes).then(
        ({ size, truncated }) => {
          if (truncated) fail(tooLarge(maxBytes))
          else file = { path: target, name: sanitizeFileName(info.filename), size }
        },
        (error: Error) => {
          // Far over the limit: stop reading; the answer closes the connection.
          fail(error)
          ctx.req.unpipe(parser)
          finish()
        }
      )
    })
    parser.on('filesLimit', () => fail(new BadRequest('Validation failed', { errors: { file: 'send one file per request' } })))
    parser.on('fieldsLimit', () => fail(new BadRequest('Too many form fields')))
    parser.on('partsLimit', () => fail(new BadRequest('Too many form fields')))
    parser.on('error', () => {
      fail(new BadRequest('Malformed multipart/form-data body'))
      finish()
    })
    parser.on('close', finish)
    ctx.req.on('error', (error) => reject(error))
    ctx.req.on('aborted', () => reject(new BadRequest('The upload was interrupted')))
    ctx.req.pipe(parser)
  })
}

/**
 * Koa middleware in front of a create that takes a file (POST /product-media, POST /imports): authenticates the request first (401, and
 * the connection closed, before a byte of the body is read), then streams the multipart body
 * (the app's body parser reads JSON only), enforcing the size limit while reading. The text
 * fields become the call's data, the file is params.upload; the temporary file is removed when
 * the call ends, whatever its outcome.
 */
export const multipartUpload = (app: Application, maxBytes: () => number) => async (ctx: Context, next: Next) => {
  const createCall = ctx.method === 'POST' && ctx.lookup?.params?.__id === undefined
  if (!createCall || !ctx.is('multipart/form-data')) return next()
  try {
    await authenticateBeforeBody(app, ctx)
  } catch (error) {
    ctx.set('Connection', 'close')
    throw error
  }
  const limit = maxBytes()
  if (Number(ctx.get('content-length') || 0) > limit + MULTIPART_OVERHEAD) {
    ctx.set('Connection', 'close')
    throw tooLarge(limit)
  }
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), UPLOAD_DIRECTORY_PREFIX))
  try {
    const { fields, file } = await parseMultipart(ctx, directory, limit).catch((error) => {
      if (error?.code === 413) ctx.set('Connection', 'close')
      throw error
    })
    ;(ctx.request as any).body = { ...fields }
    ctx.feathers = { ...ctx.feathers, upload: file }
    await next()
  } finally {
    await fs.promises.rm(directory, { recursive: true, force: true })
  }
}
