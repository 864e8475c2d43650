import type { Knex } from 'knex'

/**
 * Which worker holds a running outbox job (src/outbox/liveness.ts): each worker takes an id from
 * outbox_worker_ids and holds an advisory lock on it for as long as its session lives, so a
 * process starting after a crash finds the jobs of workers that are gone and takes them over at
 * once instead of when their lease runs out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE SEQUENCE outbox_worker_ids AS integer CYCLE')
  await knex.schema.alterTable('outbox_jobs', (t) => {
    t.integer('claimed_by')
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('outbox_jobs', (t) => {
    t.dropColumn('claimed_by')
  })
  await knex.raw('DROP SEQUENCE IF EXISTS outbox_worker_ids')
}
