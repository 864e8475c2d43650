import type { Knex } from 'knex'

/**
 * invitations.created events carried the invitation's token in data.object, and their stored
 * deliveries kept it: whoever reads the organization's deliveries (or redelivers one to a URL
 * of theirs) could accept an owner invitation. Events leave secret fields out now
 * (src/webhook-events.ts); this takes the token out of the deliveries already stored.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE webhook_deliveries SET payload = payload #- '{data,object,token}'
    WHERE type LIKE 'invitations.%' AND payload #> '{data,object,token}' IS NOT NULL
  `)
}

export async function down(): Promise<void> {
  // The tokens are gone; there is nothing to put back.
}
