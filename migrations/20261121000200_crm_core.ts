import type { Knex } from 'knex'
import { tenantTable, tenantReference } from './lib/tenant-table.js'

// The core CRM tables, created together so that every resource can reference the others.
// Each resource's own indexes and later columns come in its own migrations.
export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'custom_fields', (t) => {
    t.text('entity_type').notNullable()
    t.text('key').notNullable()
    t.text('name').notNullable()
    t.text('field_type').notNullable()
    t.jsonb('options')
    t.boolean('required').notNullable().defaultTo(false)
    t.integer('position').notNullable().defaultTo(0)
    t.check(`entity_type IN ('company', 'contact', 'deal', 'reservation')`, [], 'custom_fields_entity_type_check')
  })

  await tenantTable(knex, 'contacts', (t) => {
    t.text('first_name').notNullable()
    t.text('last_name')
    t.text('email')
    t.text('phone')
    t.text('phone_normalized')
    t.text('phone_country_code')
    t.text('phone_country_iso')
    t.integer('company_id')
    t.integer('owned_by_user_id').references('id').inTable('users')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.text('channel_whatsapp_wa_id')
    t.text('channel_instagram_user_id')
    t.text('system_type').notNullable().defaultTo('contact')
    t.text('avatar_url')
    t.jsonb('custom_fields').notNullable().defaultTo('{}')
    tenantReference(t, 'company_id', 'companies')
    t.index(['organization_id', 'created_at'])
    t.index(['organization_id', 'company_id'])
  })

  await tenantTable(knex, 'pipelines', (t) => {
    t.text('name').notNullable()
    t.text('type').notNullable().defaultTo('deal')
    t.integer('position').notNullable().defaultTo(0)
    t.check(`type IN ('deal', 'conversation')`, [], 'pipelines_type_check')
  })

  await tenantTable(knex, 'pipeline_stages', (t) => {
    t.integer('pipeline_id').notNullable()
    t.text('name').notNullable()
    t.integer('position').notNullable().defaultTo(0)
    t.integer('probability')
    t.check('probability IS NULL OR probability BETWEEN 0 AND 100', [], 'pipeline_stages_probability_check')
    tenantReference(t, 'pipeline_id', 'pipelines')
    // Lets deals reference (pipeline, stage) as a pair, so a stage of another pipeline is impossible.
    t.unique(['organization_id', 'pipeline_id', 'id'])
  })

  await tenantTable(knex, 'products', (t) => {
    t.text('name').notNullable()
    t.text('sku')
    t.text('description')
    t.decimal('price', 14, 2)
    t.text('currency')
    t.decimal('tax_percentage', 5, 2)
    t.boolean('active').notNullable().defaultTo(true)
  })

  await tenantTable(knex, 'deals', (t) => {
    t.text('name').notNullable()
    t.decimal('amount', 14, 2).notNullable()
    t.text('currency').notNullable()
    t.text('status').notNullable()
    t.integer('pipeline_id').notNullable()
    t.integer('pipeline_stage_id').notNullable()
    t.integer('contact_id')
    t.integer('company_id')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.integer('owned_by_user_id').references('id').inTable('users')
    t.date('expected_close_date')
    t.timestamp('won_date', { useTz: true })
    t.timestamp('lost_date', { useTz: true })
    t.jsonb('custom_fields').notNullable().defaultTo('{}')
    t.check(`status IN ('open', 'won', 'lost')`, [], 'deals_status_check')
    tenantReference(t, 'pipeline_id', 'pipelines')
    t.foreign(['organization_id', 'pipeline_id', 'pipeline_stage_id'])
      .references(['organization_id', 'pipeline_id', 'id'])
      .inTable('pipeline_stages')
    tenantReference(t, 'contact_id', 'contacts')
    tenantReference(t, 'company_id', 'companies')
    t.index(['organization_id', 'created_at'])
    t.index(['organization_id', 'pipeline_stage_id'])
  })

  await tenantTable(knex, 'deal_products', (t) => {
    t.integer('deal_id').notNullable()
    t.integer('product_id').notNullable()
    t.decimal('quantity', 14, 4).notNullable()
    t.decimal('price', 14, 2).notNullable()
    t.text('description')
    t.text('discount_type')
    t.decimal('discount_amount', 14, 2)
    t.decimal('discount_percentage', 5, 2)
    t.decimal('tax_percentage', 5, 2).notNullable().defaultTo(0)
    t.decimal('total_amount_without_tax', 14, 2).notNullable()
    t.decimal('total_amount_with_tax', 14, 2).notNullable()
    t.text('name')
    t.text('sku')
    tenantReference(t, 'deal_id', 'deals')
    tenantReference(t, 'product_id', 'products')
    t.index(['organization_id', 'deal_id'])
  })

  await tenantTable(knex, 'activity_types', (t) => {
    t.text('name').notNullable()
    t.text('color')
    t.text('icon_key')
  })

  await tenantTable(knex, 'activities', (t) => {
    t.integer('created_by_user_id').references('id').inTable('users')
    t.integer('assigned_to_user_id').references('id').inTable('users')
    t.text('subject')
    t.text('note')
    t.text('public_description')
    t.text('location')
    t.jsonb('location_geocoded')
    t.date('start_date')
    t.date('end_date')
    t.time('start_time')
    t.time('end_time')
    t.integer('duration')
    t.integer('deal_id')
    t.integer('contact_id')
    t.integer('company_id')
    t.text('activity_type')
    t.integer('activity_type_id')
    t.boolean('done').notNullable().defaultTo(false)
    tenantReference(t, 'deal_id', 'deals')
    tenantReference(t, 'contact_id', 'contacts')
    tenantReference(t, 'company_id', 'companies')
    tenantReference(t, 'activity_type_id', 'activity_types')
    t.index(['organization_id', 'start_date'])
  })
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'activities', 'activity_types', 'deal_products', 'deals', 'products',
    'pipeline_stages', 'pipelines', 'contacts', 'custom_fields'
  ]) {
    await knex.schema.dropTableIfExists(table)
  }
}
