import type { Readable } from 'node:stream'

/** What a signed upload URL binds: one object key, one content type, a size limit, an expiry. */
export interface UploadGrant {
  key: string
  contentType: string
  size: number
  expiresAt: Date
}

export interface SignedUpload {
  url: string
  /** Headers the client must send with the PUT, exactly as given. */
  headers: Record<string, string>
}

/**
 * Where files live. Keys are always derived by the service (never from a client's file name)
 * and look like `<organization>/<folder>/<random>.<ext>`. Two adapters: S3 (or any
 * S3-compatible store) and local disk under DATA_DIR.
 */
export interface Storage {
  readonly kind: 'local' | 's3'
  /** Stores a stream of exactly `size` bytes under key. */
  put(key: string, body: Readable, options: { contentType: string; size: number }): Promise<void>
  /** The stored object's size in bytes; undefined when no object is stored under key. */
  size(key: string): Promise<number | undefined>
  /** The stored object's bytes, as a stream (a file an import reads again, say). */
  read(key: string): Promise<Readable>
  /** Removes the object; removing an absent object is not an error. */
  delete(key: string): Promise<void>
  /** The public URL the object is read from. */
  publicUrl(key: string): string
  /** A URL a client can PUT one file to, without credentials, until the grant expires. */
  signUpload(grant: UploadGrant): Promise<SignedUpload>
  /** A URL that downloads the object without credentials until expiresAt (a private bucket included). */
  signDownload(key: string, expiresAt: Date): Promise<string>
}

/** File extension per media type, for keys of signed uploads (multipart uploads use the detected extension). */
export const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/avif': 'avif',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/quicktime': 'mov',
  'application/pdf': 'pdf',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/mp4': 'm4a'
}

export const typeOfExtension = (key: string) => {
  const extension = key.slice(key.lastIndexOf('.') + 1).toLowerCase()
  return Object.entries(EXTENSIONS).find(([, ext]) => ext === extension)?.[0] ?? 'application/octet-stream'
}

// Keys are built by the service from ids and random ids (nanoid's alphabet: A-Za-z0-9_-); anything
// else, '..' and absolute paths included, is refused before touching a disk or a bucket.
const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\.[a-z0-9]{1,8}$/

export const isValidKey = (key: string) => key.length <= 512 && KEY.test(key)

export const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/')

/**
 * Keys in an organization's private folder (`<organization>/private/...`: the CSV files of
 * imports) are never served at a public URL: they are read by the service only.
 */
export const PRIVATE_FOLDER = 'private'
export const isPrivateKey = (key: string) => key.split('/')[1] === PRIVATE_FOLDER
