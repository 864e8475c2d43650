import fs from 'node:fs'
import { BadRequest } from '@feathersjs/errors'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import { nanoid } from 'nanoid'
import type { Application } from '../../../declarations.js'
import { requestLog } from '../../../logger.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import type { Relation } from '../../../engine/read-model.js'
import { mediaTypeList } from '../../../storage/index.js'
import { requireAcceptedType } from '../../../storage/receive.js'
import { sanitizeFileName } from '../../../storage/multipart.js'
import type { UploadedFile } from '../../../storage/multipart.js'
import { databaseOf } from '../../../db.js'
import type {
  ProductMedia, ProductMediaData, ProductMediaPatch, ProductMediaQuery, ProductMediaReorder, ProductMediaReorderResult
} from './product-media.schema.js'

export type { ProductMedia, ProductMediaData, ProductMediaPatch, ProductMediaQuery, ProductMediaReorder, ProductMediaReorderResult }
export type ProductMediaParams = KnexAdapterParams<ProductMediaQuery>

export { sanitizeFileName }
export type { UploadedFile }

export const PRODUCT: Relation = { from: 'product_id', as: 'product', table: 'products', columns: ['id', 'name'] }
const PURGE_BATCH = 100

/**
 * Serialises the writes that choose positions among one product's media: the product row is
 * locked (FOR NO KEY UPDATE, which does not block references to it) until the transaction
 * ends, so two uploads never compute the same next position. The partial unique index
 * product_media_live_position_unique is the guarantee behind it.
 */
async function lockProductMedia(trx: Knex.Transaction, organizationId: number, productId: number) {
  await trx('products').select('id').where({ organization_id: organizationId, id: productId }).forNoKeyUpdate()
}

/**
 * After the last live item of the product, read under lockProductMedia's lock (a statement of its
 * own: Citus takes no subquery in an INSERT's values).
 */
async function nextPosition(trx: Knex.Transaction, organizationId: number, productId: number): Promise<number> {
  const [{ next }] = await trx('product_media').where({ organization_id: organizationId, product_id: productId }).whereNull('deleted_at')
    .select(trx.raw('coalesce(max(position) + 1, 0)::int AS next'))
  return next
}

export class ProductMediaService extends RecordService<ProductMedia, ProductMediaData, ProductMediaParams, ProductMediaPatch> {
  constructor(options: RecordServiceOptions, private app: Application) {
    super(options)
  }

  private get storage() {
    return this.app.get('storage')
  }

  /** Lists are in display order unless the caller sorts otherwise. */
  async find(params: ProductMediaParams = {}): Promise<any> {
    const query = { ...(params.query ?? {}) } as Record<string, any>
    query.$sort ??= { position: 1 }
    return super.find({ ...params, query } as ProductMediaParams)
  }

  /**
   * Stores the uploaded file under a key the service derives (organization/product/random id
   * with the extension of the detected type), then writes the row; if the write fails the
   * stored object is removed, so no file is left without a record.
   */
  async create(body: any, params: ProductMediaParams = {}): Promise<any> {
    const data = body as ProductMediaData
    const upload = params.upload
    if (!upload) {
      throw new BadRequest('Validation failed', { errors: { file: 'is required: send multipart/form-data with a file field' } })
    }
    const detected = await requireAcceptedType(upload.path, mediaTypeList(this.app.get('mediaTypes')))
    const organizationId = data.organization_id!
    const key = `${organizationId}/${data.product_id}/${nanoid()}.${detected.ext}`
    await this.storage.put(key, fs.createReadStream(upload.path), { contentType: detected.mime, size: upload.size })
    const publicUrl = this.storage.publicUrl(key)
    try {
      return await databaseOf(params, this.knex).transaction(async (trx) => {
        await lockProductMedia(trx, organizationId, data.product_id)
        const [media] = await this.written(trx, trx('product_media').insert({
          organization_id: organizationId,
          product_id: data.product_id,
          file_name: upload.name,
          file_type: detected.mime,
          file_size: upload.size,
          file_path: new URL(publicUrl).pathname,
          storage_key: key,
          storage_path: publicUrl,
          position: data.position ?? await nextPosition(trx, organizationId, data.product_id)
        }).returning('*'))
        return media
      })
    } catch (error) {
      await this.storage.delete(key).catch((cleanup) => requestLog(this.app.get('logger'), params.requestId).error({ err: cleanup, key }, 'orphan file not removed'))
      throw error
    }
  }

  /**
   * One purge pass: removes the files of items deleted longer ago than the grace period and
   * marks them purged. Rows are claimed with FOR UPDATE SKIP LOCKED inside a transaction that
   * lasts until they are marked, so concurrent passes (other instances) never take the same
   * row and each file is purged once; a pass that dies leaves its rows to the next one. Upkeep,
   * not a change of the app's records: it goes through the background knex.
   */
  async purgeDeleted(): Promise<number> {
    let purged = 0
    // Claimed one organization at a time: on Citus a claim (FOR UPDATE) reads one shard only.
    const organizations: { organization_id: number }[] = await this.due(this.app.get('backgroundKnex')).distinct('organization_id')
    for (const { organization_id: organizationId } of organizations) {
      for (;;) {
        const batch = await this.purgeBatch(organizationId)
        purged += batch.purged
        if (batch.claimed < PURGE_BATCH || batch.purged === 0) break
      }
    }
    return purged
  }

  /** Deleted items past the grace period whose files are not purged yet. */
  private due(db: Knex | Knex.Transaction) {
    return db('product_media')
      .whereNotNull('deleted_at')
      .whereNull('purged_at')
      .whereRaw('deleted_at <= now() - make_interval(secs => ?)', [this.app.get('mediaPurgeGraceS')])
  }

  private purgeBatch(organizationId: number) {
    return this.app.get('backgroundKnex').transaction(async (trx: Knex.Transaction) => {
      const rows: { organization_id: number; id: number; storage_key: string }[] = await this.due(trx)
        .where('organization_id', organizationId)
        .select('organization_id', 'id', 'storage_key')
        .orderBy('deleted_at')
        .limit(PURGE_BATCH)
        .forUpdate()
        .skipLocked()
      const done: [number, number][] = []
      for (const row of rows) {
        try {
          await this.storage.delete(row.storage_key)
          done.push([row.organization_id, row.id])
        } catch (error) {
          this.app.get('logger')?.error({ err: error, key: row.storage_key }, 'media purge: file not removed, retried next pass')
        }
      }
      if (done.length) {
        await trx('product_media').whereIn(['organization_id', 'id'], done).update({ purged_at: trx.fn.now() })
      }
      return { claimed: rows.length, purged: done.length }
    })
  }
}

/** POST /product-media/reorder: new positions for several items of one product, all or nothing. */
export class ProductMediaReorderService {
  constructor(
    private knex: Knex,
    private media: RecordService
  ) {}

  async create(data: ProductMediaReorder, params: ProductMediaParams = {}): Promise<ProductMediaReorderResult> {
    const ids = data.positions.map((entry) => entry.id)
    if (new Set(ids).size !== ids.length) {
      throw new BadRequest('Validation failed', { errors: { positions: 'must list each id once' } })
    }
    if (new Set(data.positions.map((entry) => entry.position)).size !== ids.length) {
      throw new BadRequest('Validation failed', { errors: { positions: 'must give each item a different position' } })
    }
    return this.knex.transaction(async (trx) => {
      const scope = { organization_id: data.organization_id!, product_id: data.product_id }
      await lockProductMedia(trx, scope.organization_id, scope.product_id)
      const live: { id: number }[] = await trx('product_media').select('id').where(scope).whereNull('deleted_at').whereIn('id', ids).forUpdate()
      const found = new Set(live.map((row) => row.id))
      const missing = ids.filter((id) => !found.has(id))
      if (missing.length) {
        throw new BadRequest('Invalid reference', {
          errors: { positions: `ids ${missing.join(', ')} are not live media of this product` }
        })
      }
      // The unique index is checked row by row, so a swap would collide halfway: the items
      // first step aside to negative positions (distinct, as their positions are), then move.
      await trx('product_media').where(scope).whereNull('deleted_at').whereIn('id', ids)
        .update({ position: trx.raw('-1 - position') })
      // A searched CASE: Citus sends the simple form (CASE id WHEN $1 …) to the workers as id = boolean.
      const cases = data.positions.map(() => 'WHEN id = ? THEN ?::integer').join(' ')
      const rows = await trx('product_media')
        .where(scope)
        .whereNull('deleted_at')
        .whereIn('id', ids)
        .update({
          position: trx.raw(`CASE ${cases} END`, data.positions.flatMap((entry) => [entry.id, entry.position])),
          updated_at: trx.fn.now()
        })
        .returning('*')
      // Each item moved is a product-media patched event (announceChanges).
      params.changedRecords = await this.media.rendered(rows, { transaction: { trx } })
      return { success: true, updated: rows.length }
    })
  }
}

export const getOptions = (app: Application): RecordServiceOptions => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'product_media'
})
