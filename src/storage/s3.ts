import { createRequire } from 'node:module'
import type { Readable } from 'node:stream'
import type { S3Client } from '@aws-sdk/client-s3'
import { encodeKey } from './storage.js'
import type { SignedUpload, Storage, UploadGrant } from './storage.js'

export interface S3Settings {
  bucket: string
  region: string
  endpoint: string
  accessKeyId: string
  secretAccessKey: string
  forcePathStyle: boolean
  publicUrl: string
}

// The AWS SDK is large in memory: it loads when an S3 store is created, not with the
// application (a service storing files on local disk never pays for it).
const require = createRequire(import.meta.url)
let sdk: typeof import('@aws-sdk/client-s3') | undefined
let presigner: typeof import('@aws-sdk/s3-request-presigner') | undefined
const s3Sdk = () => (sdk ??= require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3'))
const s3Presigner = () => (presigner ??= require('@aws-sdk/s3-request-presigner') as typeof import('@aws-sdk/s3-request-presigner'))

/** Files in an S3 bucket, or in any S3-compatible store named by endpoint (MinIO, R2, s3rver...). */
export class S3Storage implements Storage {
  readonly kind = 's3' as const
  readonly client: S3Client

  constructor(private settings: S3Settings) {
    this.client = new (s3Sdk().S3Client)({
      region: settings.region || 'us-east-1',
      endpoint: settings.endpoint || undefined,
      forcePathStyle: settings.forcePathStyle,
      // Without explicit keys the SDK's default chain applies (environment, instance role...).
      credentials: settings.accessKeyId
        ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey }
        : undefined,
      // S3-compatible stores do not all understand the SDK's default flexible checksums.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED'
    })
  }

  async put(key: string, body: Readable, options: { contentType: string; size: number }) {
    await this.client.send(new (s3Sdk().PutObjectCommand)({
      Bucket: this.settings.bucket,
      Key: key,
      Body: body,
      ContentType: options.contentType,
      ContentLength: options.size
    }))
  }

  async size(key: string) {
    try {
      const head = await this.client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: this.settings.bucket, Key: key }))
      return head.ContentLength
    } catch (error: any) {
      if (error?.name === 'NotFound' || error?.$metadata?.httpStatusCode === 404) return undefined
      throw error
    }
  }

  async read(key: string) {
    const object = await this.client.send(new (s3Sdk().GetObjectCommand)({ Bucket: this.settings.bucket, Key: key }))
    // In Node the SDK's body is a Readable (an IncomingMessage).
    return object.Body as Readable
  }

  async delete(key: string) {
    await this.client.send(new (s3Sdk().DeleteObjectCommand)({ Bucket: this.settings.bucket, Key: key }))
  }

  publicUrl(key: string) {
    const { bucket, region, endpoint, forcePathStyle, publicUrl } = this.settings
    if (publicUrl) return `${publicUrl.replace(/\/+$/, '')}/${encodeKey(key)}`
    if (!endpoint) return `https://${bucket}.s3.${region}.amazonaws.com/${encodeKey(key)}`
    const base = new URL(endpoint)
    if (forcePathStyle) return `${base.origin}/${bucket}/${encodeKey(key)}`
    return `${base.protocol}//${bucket}.${base.host}/${encodeKey(key)}`
  }

  /** A presigned GET, which works on a private bucket too. */
  async signDownload(key: string, expiresAt: Date) {
    const expiresIn = Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))
    return s3Presigner().getSignedUrl(this.client, new (s3Sdk().GetObjectCommand)({ Bucket: this.settings.bucket, Key: key }), { expiresIn })
  }

  /** A presigned PUT: content type and length are part of the signature, so S3 refuses anything else. */
  async signUpload(grant: UploadGrant): Promise<SignedUpload> {
    const expiresIn = Math.max(1, Math.floor((grant.expiresAt.getTime() - Date.now()) / 1000))
    const command = new (s3Sdk().PutObjectCommand)({
      Bucket: this.settings.bucket,
      Key: grant.key,
      ContentType: grant.contentType,
      ContentLength: grant.size
    })
    const url = await s3Presigner().getSignedUrl(this.client, command, {
      expiresIn,
      signableHeaders: new Set(['content-type', 'content-length'])
    })
    return { url, headers: { 'Content-Type': grant.contentType } }
  }
}
