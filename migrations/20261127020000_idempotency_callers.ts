import type { Knex } from 'knex'

/**
 * Idempotency keys belong to the caller (src/hooks/idempotency.ts): scope 'api-key:<id>',
 * 'user:<id>', 'visitor:<token hash>' or 'anonymous', where it was the organization, so that
 * nobody else in the organization replays an answer or takes a key first. A row keeps the
 * caller's rights where the request acted (a replay needs the same), never a secret of the
 * answer (only that one was withheld), and a hash of the whole request (the path may carry a
 * token and is kept redacted).
 *
 * The rows of the organization scopes can no longer be matched, and some hold secrets in plain
 * text: they are deleted (a key lives a day at most).
 */
export async function up(knex: Knex): Promise<void> {
  await knex('idempotency_keys').delete()
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.renameColumn('body_hash', 'request_hash')
    t.text('caller_rights')
    t.boolean('secrets_withheld').notNullable().defaultTo(false)
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex('idempotency_keys').delete()
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropColumn('secrets_withheld')
    t.dropColumn('caller_rights')
    t.renameColumn('request_hash', 'body_hash')
  })
}
