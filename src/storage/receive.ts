import fs from 'node:fs'
import { Transform } from 'node:stream'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { BadRequest, FeathersError } from '@feathersjs/errors'

export const tooLarge = (limit: number) =>
  new FeathersError(`The file is larger than the limit of ${limit} bytes`, 'PayloadTooLarge', 413, 'payload-too-large', {
    errors: { file: `must be at most ${limit} bytes` }
  })

// A body over the limit is read to its end (so the client gets the 413 instead of a reset
// connection) but only up to this much more; past it the connection is cut.
const DRAIN_ALLOWANCE = 1024 * 1024

/**
 * Writes a stream to a new file and counts it. At most `limit` bytes are kept: a larger body
 * is drained and reported as truncated, or cut off when it goes far beyond the limit.
 */
export async function receiveToFile(source: Readable, file: string, limit: number): Promise<{ size: number; truncated: boolean }> {
  let size = 0
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length
      if (size > limit + DRAIN_ALLOWANCE) return callback(tooLarge(limit))
      if (size > limit) return callback()
      callback(null, chunk)
    }
  })
  await pipeline(source, cap, fs.createWriteStream(file, { flags: 'wx' }))
  return { size: Math.min(size, limit), truncated: size > limit }
}

export interface DetectedType {
  mime: string
  ext: string
}

/** The media type read from the file's own bytes (magic numbers), never from its name or a header. */
export async function detectFileType(file: string): Promise<DetectedType | undefined> {
  // Loaded on the first upload, not with the application.
  const { fileTypeFromFile } = await import('file-type')
  const detected = await fileTypeFromFile(file)
  return detected ? { mime: detected.mime, ext: detected.ext } : undefined
}

/** 400 unless the bytes are one of the accepted media types. */
export async function requireAcceptedType(file: string, accepted: Set<string>): Promise<DetectedType> {
  const detected = await detectFileType(file)
  if (!detected || !accepted.has(detected.mime)) {
    const found = detected ? `a ${detected.mime} file` : 'a file of an unrecognised type'
    throw new BadRequest(`Unsupported file type: the content is ${found}`, {
      errors: { file: `must be one of: ${[...accepted].join(', ')} (detected from the file's content)` }
    })
  }
  return detected
}
