import type { Knex } from 'knex'

/**
 * The outbox claims each topic's due jobs apart (src/outbox/slots.ts: every topic has slots of its
 * own), so the index of due jobs leads with the topic: a topic's claim reads its own due jobs
 * only, however many another topic has waiting.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX outbox_jobs_due_by_topic ON outbox_jobs (topic, next_attempt_at, id) WHERE status IN ('pending', 'running')`)
  await knex.raw('DROP INDEX outbox_jobs_due')
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX outbox_jobs_due ON outbox_jobs (next_attempt_at, id) WHERE status IN ('pending', 'running')`)
  await knex.raw('DROP INDEX outbox_jobs_due_by_topic')
}
