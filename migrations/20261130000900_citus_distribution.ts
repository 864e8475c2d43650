import type { Knex } from 'knex'
import { distributeSchema } from './lib/citus.js'

/**
 * On a Citus coordinator, distributes the schema by organization (migrations/lib/citus.ts): tenant
 * tables by organization_id, co-located; shared tables as reference tables; the outbox and the
 * idempotency records on the coordinator. On plain Postgres and PGlite it does nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await distributeSchema(knex)
}

// Undistributing is an operator's decision (undistribute_table per table), not a rollback's.
export async function down(): Promise<void> {}
