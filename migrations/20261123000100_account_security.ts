import type { Knex } from 'knex'

/**
 * Account hardening (issue 16):
 * - users.email is stored lower-cased (it always was at sign-up; now the database says so);
 * - users.email_verified_at: null until the address is proven (verification link or invitation);
 * - users.sessions_valid_after: JWTs issued before it are refused (set on password and e-mail changes);
 * - email_verifications: single-use, expiring verification tokens, stored as SHA-256 hashes;
 * - invitation tokens are stored as SHA-256 hashes only (the plain token lives in the e-mail).
 * PGlite accepts one statement per query, so every raw statement stands alone.
 */
export async function up(knex: Knex): Promise<void> {
  // users_email_unique is on lower(email), so lower-casing cannot make two rows collide.
  await knex.raw('UPDATE users SET email = lower(email) WHERE email <> lower(email)')
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('email_verified_at', { useTz: true, precision: 3 })
    t.timestamp('sessions_valid_after', { useTz: true, precision: 3 })
    t.check('email = lower(email)', [], 'users_email_lower_check')
  })

  // A global table, like users: a verification belongs to an account, not to an organization.
  await knex.schema.createTable('email_verifications', (t) => {
    t.increments('id')
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE')
    // The address the token proves: a token mailed before an e-mail change cannot verify the new address.
    t.text('email').notNullable()
    t.text('token_hash').notNullable().unique()
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable()
    t.timestamp('used_at', { useTz: true, precision: 3 })
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now())
    t.index(['user_id'])
  })

  await knex.schema.alterTable('organizations_users_invites', (t) => {
    t.text('token_hash')
  })
  await knex.raw(`UPDATE organizations_users_invites SET token_hash = encode(sha256(convert_to(token, 'UTF8')), 'hex')`)
  await knex.schema.alterTable('organizations_users_invites', (t) => {
    t.dropUnique(['token'])
    t.dropColumn('token')
    t.unique(['token_hash'])
  })
  await knex.raw('ALTER TABLE organizations_users_invites ALTER COLUMN token_hash SET NOT NULL')
}

export async function down(knex: Knex): Promise<void> {
  // The plain tokens are gone for good: pending invitations get an unusable random token.
  await knex.schema.alterTable('organizations_users_invites', (t) => {
    t.text('token')
  })
  await knex.raw(`UPDATE organizations_users_invites SET token = md5(random()::text || id::text) || token_hash`)
  await knex.raw('ALTER TABLE organizations_users_invites ALTER COLUMN token SET NOT NULL')
  await knex.schema.alterTable('organizations_users_invites', (t) => {
    t.dropUnique(['token_hash'])
    t.dropColumn('token_hash')
    t.unique(['token'])
  })
  await knex.schema.dropTableIfExists('email_verifications')
  await knex.schema.alterTable('users', (t) => {
    t.dropChecks(['users_email_lower_check'])
    t.dropColumn('sessions_valid_after')
    t.dropColumn('email_verified_at')
  })
}
