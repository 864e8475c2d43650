import type { Knex } from 'knex'
import { tenantReference, tenantTable } from './lib/tenant-table.js'

// Product media (issue 8): files of a product, kept in S3 or on local disk. A deleted item's
// file is removed by the background purge after a grace period, which then sets purged_at.
export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'product_media', (t) => {
    t.integer('product_id').notNullable()
    t.text('file_name').notNullable()
    t.text('file_type').notNullable()
    t.bigInteger('file_size').notNullable()
    t.text('file_path').notNullable()
    t.text('storage_key').notNullable()
    t.text('storage_path').notNullable()
    t.integer('position').notNullable().defaultTo(0)
    t.timestamp('purged_at', { useTz: true })
    tenantReference(t, 'product_id', 'products')
    t.unique(['organization_id', 'storage_key'])
  })
  // Lists of a product's live media, in display order.
  await knex.raw('CREATE INDEX product_media_product_position_index ON product_media (organization_id, product_id, position) WHERE deleted_at IS NULL')
  // The purge's work list: deleted items whose file is still stored (small, so scanned whole).
  await knex.raw('CREATE INDEX product_media_purge_index ON product_media (organization_id, deleted_at) WHERE deleted_at IS NOT NULL AND purged_at IS NULL')
  await knex.raw('ALTER TABLE product_media ADD CONSTRAINT product_media_file_size_check CHECK (file_size >= 0)')
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('product_media')
}
