import type { Knex } from 'knex'
import { tenantTable } from './lib/tenant-table.js'

// PGlite accepts one statement per query, so every raw statement stands alone.
export async function up(knex: Knex): Promise<void> {
  for (const extension of ['pg_trgm', 'btree_gist', 'btree_gin', 'unaccent']) {
    await knex.raw(`CREATE EXTENSION IF NOT EXISTS ${extension}`)
  }

  await knex.schema.createTable('users', (t) => {
    t.increments('id')
    t.text('email').notNullable()
    t.text('password').notNullable()
    t.text('first_name')
    t.text('last_name')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
  await knex.raw('CREATE UNIQUE INDEX users_email_unique ON users (lower(email))')

  await knex.schema.createTable('organizations', (t) => {
    t.increments('id')
    t.text('name').notNullable()
    t.text('subscription_status').notNullable().defaultTo('active')
    t.text('timezone').notNullable().defaultTo('UTC')
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
  await knex.raw('CREATE INDEX organizations_name_trgm ON organizations USING gin (name gin_trgm_ops)')

  await tenantTable(knex, 'organizations_users', (t) => {
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE')
    t.text('role').notNullable()
    t.check(`role IN ('owner', 'admin', 'member')`, [], 'organizations_users_role_check')
    t.unique(['organization_id', 'user_id'])
    t.index(['user_id'])
  }, { softDelete: false })

  await tenantTable(knex, 'api_keys', (t) => {
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE')
    t.text('name').notNullable()
    t.text('prefix').notNullable()
    t.text('key_hash').notNullable()
    t.boolean('active').notNullable().defaultTo(true)
    t.timestamp('last_used_at', { useTz: true })
    // The hash is looked up before the organization is known; it is globally unique by construction.
    t.unique(['key_hash'])
  })

  await tenantTable(knex, 'companies', (t) => {
    t.text('name').notNullable()
    t.text('description')
    t.text('website')
    t.text('industry')
    t.text('size')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.integer('owned_by_user_id').references('id').inTable('users')
    t.jsonb('custom_fields').notNullable().defaultTo('{}')
    t.index(['organization_id', 'created_at'])
    t.index(['organization_id', 'owned_by_user_id'])
  })
  await knex.raw(
    'CREATE INDEX companies_search_trgm ON companies USING gin (organization_id, lower(name) gin_trgm_ops, lower(website) gin_trgm_ops) WHERE deleted_at IS NULL'
  )
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['companies', 'api_keys', 'organizations_users', 'organizations', 'users']) {
    await knex.schema.dropTableIfExists(table)
  }
}
