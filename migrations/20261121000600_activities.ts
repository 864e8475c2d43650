import type { Knex } from 'knex'

// Indexes and rules of activities and activity types (issue 6). PGlite runs one statement per
// raw call, so every statement stands alone.
const STATEMENTS = [
  // A name is unique among an organization's live types; a deleted type frees its name.
  'CREATE UNIQUE INDEX activity_types_live_name_unique ON activity_types (organization_id, lower(name)) WHERE deleted_at IS NULL',
  'CREATE INDEX activity_types_name_trgm ON activity_types USING gin (organization_id, lower(name) gin_trgm_ops) WHERE deleted_at IS NULL',
  `ALTER TABLE activity_types ADD CONSTRAINT activity_types_color_check CHECK (color IS NULL OR color ~ '^#[0-9A-Fa-f]{6}$')`,
  'ALTER TABLE activities ADD CONSTRAINT activities_duration_check CHECK (duration IS NULL OR duration >= 0)',
  'CREATE INDEX activities_assigned_to_user_id_index ON activities (organization_id, assigned_to_user_id, start_date) WHERE deleted_at IS NULL',
  'CREATE INDEX activities_created_by_user_id_index ON activities (organization_id, created_by_user_id) WHERE deleted_at IS NULL',
  'CREATE INDEX activities_deal_id_index ON activities (organization_id, deal_id) WHERE deleted_at IS NULL',
  'CREATE INDEX activities_contact_id_index ON activities (organization_id, contact_id) WHERE deleted_at IS NULL',
  'CREATE INDEX activities_company_id_index ON activities (organization_id, company_id) WHERE deleted_at IS NULL',
  // Serves the activity_type filter, and activities_count and renames through the type link.
  'CREATE INDEX activities_activity_type_index ON activities (organization_id, activity_type, start_date) WHERE deleted_at IS NULL',
  'CREATE INDEX activities_activity_type_id_index ON activities (organization_id, activity_type_id) WHERE activity_type_id IS NOT NULL',
  // The subject filter is a case-insensitive partial match.
  'CREATE INDEX activities_subject_trgm ON activities USING gin (organization_id, lower(subject) gin_trgm_ops) WHERE deleted_at IS NULL'
]

export async function up(knex: Knex): Promise<void> {
  for (const statement of STATEMENTS) await knex.raw(statement)
}

export async function down(knex: Knex): Promise<void> {
  for (const index of [
    'activities_subject_trgm', 'activities_activity_type_id_index', 'activities_activity_type_index',
    'activities_company_id_index', 'activities_contact_id_index', 'activities_deal_id_index',
    'activities_created_by_user_id_index', 'activities_assigned_to_user_id_index',
    'activity_types_name_trgm', 'activity_types_live_name_unique'
  ]) {
    await knex.raw('DROP INDEX IF EXISTS ??', [index])
  }
  await knex.raw('ALTER TABLE activities DROP CONSTRAINT IF EXISTS activities_duration_check')
  await knex.raw('ALTER TABLE activity_types DROP CONSTRAINT IF EXISTS activity_types_color_check')
}
