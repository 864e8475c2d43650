import type { Knex } from 'knex'
import { MILLISECONDS } from './lib/tenant-table.js'

/**
 * One transactional outbox for every kind of background work (mail, channel messages, webhook
 * deliveries): jobs written in the transaction of the change that causes them, drained by one
 * worker (src/outbox). A queue of the platform, drained across every organization, so a global
 * table; organization_id only attributes a job. The mail of the former mail_outbox moves in, and
 * mail_outbox stays as a read-only view of the mail jobs for operators.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('outbox_jobs', (t) => {
    t.bigIncrements('id')
    t.integer('organization_id').references('id').inTable('organizations').onDelete('SET NULL')
    t.text('topic').notNullable()
    t.text('kind').notNullable()
    t.jsonb('payload').notNullable()
    t.text('ordering_key')
    // 'pending', 'running', 'failed', or the label of the handler's finished outcome ('done', 'sent'...).
    t.text('status').notNullable().defaultTo('pending')
    t.integer('attempts').notNullable().defaultTo(0)
    t.timestamp('next_attempt_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.text('last_error')
    t.jsonb('result')
    t.timestamp('created_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('done_at', MILLISECONDS)
  })
  await knex.raw(`CREATE INDEX outbox_jobs_due ON outbox_jobs (next_attempt_at, id) WHERE status IN ('pending', 'running')`)
  await knex.raw(
    `CREATE INDEX outbox_jobs_ordering ON outbox_jobs (ordering_key, id)
     WHERE status IN ('pending', 'running') AND ordering_key IS NOT NULL`
  )
  await knex.raw(
    `INSERT INTO outbox_jobs (organization_id, topic, kind, payload, status, attempts, next_attempt_at, last_error, result, created_at, updated_at, done_at)
     SELECT organization_id, 'mail', kind,
            jsonb_strip_nulls(jsonb_build_object('to', recipient, 'subject', subject, 'text', text_body, 'html', html_body)),
            CASE status WHEN 'sending' THEN 'running' ELSE status END,
            attempts, next_attempt_at, last_error,
            CASE WHEN message_id IS NULL THEN NULL ELSE jsonb_build_object('message_id', message_id) END,
            created_at, updated_at, CASE WHEN status IN ('sent', 'logged', 'failed') THEN coalesce(sent_at, updated_at) END
     FROM mail_outbox ORDER BY id`
  )
  await knex.schema.dropTable('mail_outbox')
  await knex.raw(
    `CREATE VIEW mail_outbox AS
     SELECT id, organization_id, kind, payload->>'to' AS recipient, payload->>'subject' AS subject,
            payload->>'text' AS text_body, payload->>'html' AS html_body, status, attempts, next_attempt_at,
            last_error, result->>'message_id' AS message_id,
            (CASE WHEN status IN ('sent', 'logged') THEN done_at END)::timestamptz(3) AS sent_at, created_at, updated_at
     FROM outbox_jobs WHERE topic = 'mail'`
  )
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP VIEW IF EXISTS mail_outbox')
  await knex.schema.createTable('mail_outbox', (t) => {
    t.increments('id')
    t.integer('organization_id').references('id').inTable('organizations').onDelete('SET NULL')
    t.text('kind').notNullable()
    t.text('recipient').notNullable()
    t.text('subject').notNullable()
    t.text('text_body').notNullable()
    t.text('html_body')
    t.text('status').notNullable().defaultTo('pending')
    t.integer('attempts').notNullable().defaultTo(0)
    t.timestamp('next_attempt_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.text('last_error')
    t.text('message_id')
    t.timestamp('sent_at', MILLISECONDS)
    t.timestamp('created_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
  })
  await knex.raw(
    `INSERT INTO mail_outbox (organization_id, kind, recipient, subject, text_body, html_body, status, attempts, next_attempt_at, last_error, message_id, sent_at, created_at, updated_at)
     SELECT organization_id, kind, payload->>'to', payload->>'subject', payload->>'text', payload->>'html',
            CASE status WHEN 'running' THEN 'sending' ELSE status END, attempts, next_attempt_at, last_error,
            result->>'message_id', done_at, created_at, updated_at
     FROM outbox_jobs WHERE topic = 'mail' ORDER BY id`
  )
  await knex.schema.dropTable('outbox_jobs')
}
