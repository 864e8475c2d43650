import type { Knex } from 'knex'
import { MILLISECONDS } from './lib/tenant-table.js'

/**
 * A web-chat session's life: when its visitor was last seen (a read, a write, a socket's
 * handshake), so that a session unused for WEBCHAT_SESSION_IDLE_S expires, and when it ended
 * (the same browser opened a new session in its place). Sessions that exist already count as
 * seen now.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webchat_sessions', (t) => {
    t.timestamp('last_seen_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('ended_at', MILLISECONDS)
  })
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webchat_sessions', (t) => {
    t.dropColumn('ended_at')
    t.dropColumn('last_seen_at')
  })
}
