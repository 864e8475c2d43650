import type { Knex } from 'knex'
import { tenantTable, tenantReference } from './lib/tenant-table.js'

// Reservations (issue 10): services, resources and their links, weekly hours and exceptions,
// reservations with the unit allocations that make double booking impossible, booking links and
// AI assistants. PGlite runs one statement per raw call, so every statement stands alone.

const STATEMENTS = [
  'CREATE INDEX reservation_services_active_index ON reservation_services (organization_id, is_active) WHERE deleted_at IS NULL',
  'CREATE INDEX reservation_resources_active_index ON reservation_resources (organization_id, is_active) WHERE deleted_at IS NULL',
  // A resource is linked to a service once (among live links).
  'CREATE UNIQUE INDEX reservation_service_resources_live_unique ON reservation_service_resources (organization_id, service_id, resource_id) WHERE deleted_at IS NULL',
  'CREATE INDEX reservation_service_resources_resource_index ON reservation_service_resources (organization_id, resource_id) WHERE deleted_at IS NULL',
  // Weekly windows of one resource never overlap on a day (the service says which one in a 400 first).
  `ALTER TABLE reservation_resource_availability ADD CONSTRAINT reservation_resource_availability_no_overlap
     EXCLUDE USING gist (organization_id WITH =, resource_id WITH =, day_of_week WITH =,
       tsrange(date '2000-01-01' + start_time, date '2000-01-01' + end_time) WITH &&) WHERE (deleted_at IS NULL)`,
  'CREATE INDEX reservation_resource_availability_index ON reservation_resource_availability (organization_id, resource_id, day_of_week) WHERE deleted_at IS NULL',
  'CREATE INDEX reservation_resource_exceptions_index ON reservation_resource_exceptions (organization_id, resource_id, date) WHERE deleted_at IS NULL',
  'CREATE INDEX reservations_start_index ON reservations (organization_id, start_datetime) WHERE deleted_at IS NULL',
  'CREATE INDEX reservations_contact_index ON reservations (organization_id, contact_id) WHERE deleted_at IS NULL',
  'CREATE INDEX reservations_service_index ON reservations (organization_id, service_id, start_datetime) WHERE deleted_at IS NULL',
  'CREATE INDEX reservations_resource_index ON reservations (organization_id, resource_id, start_datetime) WHERE deleted_at IS NULL',
  'CREATE UNIQUE INDEX reservations_manage_token_unique ON reservations (manage_token_hash) WHERE manage_token_hash IS NOT NULL',
  // THE double-booking rule: one unit of one resource is held by at most one active reservation
  // at any instant (buffers included). Rows exist only while their reservation is pending or
  // confirmed; concurrent inserts of overlapping rows wait for each other and all but one fail.
  `ALTER TABLE reservation_allocations ADD CONSTRAINT reservation_allocations_no_overlap
     EXCLUDE USING gist (organization_id WITH =, resource_id WITH =, unit WITH =, during WITH &&)`,
  'CREATE INDEX reservation_allocations_reservation_index ON reservation_allocations (organization_id, reservation_id)',
  // Slugs are public addresses: unique across organizations among live links, whatever the case.
  'CREATE UNIQUE INDEX reservation_booking_links_slug_unique ON reservation_booking_links (lower(slug)) WHERE deleted_at IS NULL',
  'CREATE INDEX ai_assistants_index ON ai_assistants (organization_id, created_at) WHERE deleted_at IS NULL'
]

export async function up(knex: Knex): Promise<void> {
  await tenantTable(knex, 'reservation_services', (t) => {
    t.text('name').notNullable()
    t.text('description')
    t.integer('duration_minutes').notNullable()
    t.integer('slot_interval_minutes').notNullable()
    t.integer('buffer_before_minutes').notNullable().defaultTo(0)
    t.integer('buffer_after_minutes').notNullable().defaultTo(0)
    t.integer('min_notice_minutes').notNullable().defaultTo(0)
    t.integer('max_advance_days').notNullable().defaultTo(60)
    t.integer('max_party_size')
    t.boolean('requires_confirmation').notNullable().defaultTo(false)
    t.boolean('is_active').notNullable().defaultTo(true)
    t.text('timezone')
    t.decimal('price', 14, 2)
    t.text('currency')
    t.text('image_url')
    t.check('duration_minutes > 0 AND slot_interval_minutes > 0', [], 'reservation_services_minutes_check')
    t.check('buffer_before_minutes >= 0 AND buffer_after_minutes >= 0 AND min_notice_minutes >= 0 AND max_advance_days >= 0', [], 'reservation_services_limits_check')
  })

  await tenantTable(knex, 'reservation_resources', (t) => {
    t.text('name').notNullable()
    t.text('description')
    t.text('type').notNullable()
    t.integer('capacity').notNullable().defaultTo(1)
    t.integer('user_id').references('id').inTable('users')
    t.text('timezone')
    t.boolean('is_active').notNullable().defaultTo(true)
    t.check(`type IN ('person', 'room', 'equipment')`, [], 'reservation_resources_type_check')
    t.check('capacity > 0', [], 'reservation_resources_capacity_check')
  })

  await tenantTable(knex, 'reservation_service_resources', (t) => {
    t.integer('service_id').notNullable()
    t.integer('resource_id').notNullable()
    t.boolean('is_required').notNullable().defaultTo(true)
    t.integer('quantity').notNullable().defaultTo(1)
    t.check('quantity > 0', [], 'reservation_service_resources_quantity_check')
    tenantReference(t, 'service_id', 'reservation_services')
    tenantReference(t, 'resource_id', 'reservation_resources')
  })

  await tenantTable(knex, 'reservation_resource_availability', (t) => {
    t.integer('resource_id').notNullable()
    t.smallint('day_of_week').notNullable()
    t.time('start_time').notNullable()
    t.time('end_time').notNullable()
    t.check('day_of_week BETWEEN 0 AND 6', [], 'reservation_resource_availability_day_check')
    t.check('start_time < end_time', [], 'reservation_resource_availability_times_check')
    tenantReference(t, 'resource_id', 'reservation_resources')
  })

  await tenantTable(knex, 'reservation_resource_exceptions', (t) => {
    t.integer('resource_id').notNullable()
    t.date('date').notNullable()
    t.text('type').notNullable()
    t.time('start_time')
    t.time('end_time')
    t.text('reason')
    t.check(`type IN ('blocked', 'special_hours')`, [], 'reservation_resource_exceptions_type_check')
    t.check(
      `(start_time IS NULL AND end_time IS NULL AND type = 'blocked') OR (start_time IS NOT NULL AND end_time IS NOT NULL AND start_time < end_time)`,
      [], 'reservation_resource_exceptions_times_check'
    )
    tenantReference(t, 'resource_id', 'reservation_resources')
  })

  await tenantTable(knex, 'reservations', (t) => {
    t.integer('service_id').notNullable()
    t.integer('contact_id').notNullable()
    t.integer('resource_id')
    t.timestamp('start_datetime', { useTz: true }).notNullable()
    t.timestamp('end_datetime', { useTz: true }).notNullable()
    t.integer('party_size').notNullable().defaultTo(1)
    t.text('status').notNullable()
    t.text('notes')
    t.integer('deal_id')
    t.integer('company_id')
    t.jsonb('custom_fields').notNullable().defaultTo('{}')
    t.timestamp('cancelled_at', { useTz: true })
    t.text('cancelled_by')
    t.text('cancellation_reason')
    t.text('source').notNullable().defaultTo('api')
    t.integer('booking_link_id')
    t.text('manage_token_hash')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`status IN ('pending', 'confirmed', 'cancelled', 'completed', 'no_show')`, [], 'reservations_status_check')
    t.check(`cancelled_by IS NULL OR cancelled_by IN ('organization', 'contact')`, [], 'reservations_cancelled_by_check')
    t.check(`source IN ('api', 'booking_link', 'assistant')`, [], 'reservations_source_check')
    t.check('party_size > 0 AND start_datetime < end_datetime', [], 'reservations_range_check')
    tenantReference(t, 'service_id', 'reservation_services')
    tenantReference(t, 'contact_id', 'contacts')
    tenantReference(t, 'resource_id', 'reservation_resources')
    tenantReference(t, 'deal_id', 'deals')
    tenantReference(t, 'company_id', 'companies')
  })

  await tenantTable(knex, 'reservation_allocations', (t) => {
    t.integer('reservation_id').notNullable()
    t.integer('resource_id').notNullable()
    t.integer('unit').notNullable()
    t.specificType('during', 'tstzrange').notNullable()
    t.check('unit >= 0', [], 'reservation_allocations_unit_check')
    tenantReference(t, 'reservation_id', 'reservations', 'CASCADE')
    tenantReference(t, 'resource_id', 'reservation_resources')
  }, { softDelete: false })

  await tenantTable(knex, 'reservation_booking_links', (t) => {
    t.text('slug').notNullable()
    t.text('name').notNullable()
    t.specificType('service_ids', 'integer[]').notNullable().defaultTo('{}')
    t.boolean('is_active').notNullable().defaultTo(true)
    t.jsonb('page_config').notNullable().defaultTo('{}')
    t.integer('created_by_user_id').references('id').inTable('users')
    t.check(`slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'`, [], 'reservation_booking_links_slug_check')
  })

  await tenantTable(knex, 'ai_assistants', (t) => {
    t.text('name').notNullable()
    t.text('instructions')
    t.jsonb('internal_tools').notNullable().defaultTo('{"tools": {}}')
    t.integer('created_by_user_id').references('id').inTable('users')
  })

  for (const statement of STATEMENTS) await knex.raw(statement)
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'ai_assistants', 'reservation_booking_links', 'reservation_allocations', 'reservations',
    'reservation_resource_exceptions', 'reservation_resource_availability', 'reservation_service_resources',
    'reservation_resources', 'reservation_services'
  ]) {
    await knex.schema.dropTableIfExists(table)
  }
}
