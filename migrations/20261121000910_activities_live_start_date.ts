import type { Knex } from 'knex'

// The week-view count (GET /activities with a start_date range) counts live rows only: with
// deleted_at in the predicate, it is an index-only scan instead of a heap visit per activity.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX activities_live_start_date ON activities (organization_id, start_date) WHERE deleted_at IS NULL')
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS activities_live_start_date')
}
