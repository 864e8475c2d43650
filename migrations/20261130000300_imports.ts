import type { Knex } from 'knex'
import { MILLISECONDS, tenantReference, tenantTable } from './lib/tenant-table.js'

// Issue 49: CSV imports (docs/import-export.md). An import is a record of its organization; its
// rows that failed are kept beside it, written in the transaction of their chunk, so that a
// restarted import neither loses nor repeats one.
export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'imports', (t) => {
    t.text('resource').notNullable()
    t.text('status').notNullable().defaultTo('previewed')
    t.text('file_name').notNullable()
    t.bigInteger('file_size').notNullable()
    t.text('file_key').notNullable()
    t.text('encoding').notNullable()
    t.text('delimiter').notNullable()
    t.jsonb('columns').notNullable()
    t.jsonb('mapping').notNullable()
    t.jsonb('keys').notNullable()
    t.jsonb('preview')
    t.integer('rows_read').notNullable().defaultTo(0)
    t.integer('rows_created').notNullable().defaultTo(0)
    t.integer('rows_updated').notNullable().defaultTo(0)
    t.integer('rows_failed').notNullable().defaultTo(0)
    // The number of the last row whose chunk committed: a restarted run goes on after it.
    t.integer('last_row').notNullable().defaultTo(0)
    t.text('error')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.integer('created_by_api_key_id')
    t.timestamp('started_at', MILLISECONDS)
    t.timestamp('finished_at', MILLISECONDS)
    t.check(`resource IN ('contacts', 'companies', 'deals')`, [], 'imports_resource_check')
    t.check(`status IN ('previewed', 'queued', 'running', 'completed', 'failed', 'cancelled')`, [], 'imports_status_check')
    t.index(['organization_id', 'created_at'])
  })

  await knex.schema.createTable('import_failures', (t) => {
    t.integer('organization_id').notNullable()
    t.integer('import_id').notNullable()
    t.integer('row_number').notNullable()
    // The row's cells as read from the file, in the file's column order.
    t.jsonb('cells').notNullable()
    t.text('error').notNullable()
    t.primary(['organization_id', 'import_id', 'row_number'])
    tenantReference(t, 'import_id', 'imports', 'CASCADE')
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('import_failures')
  await knex.schema.dropTableIfExists('imports')
}
