import type { Knex } from 'knex'
import { isEmbedded } from '../db.js'
import type { Statement } from './read-model.js'

/**
 * What the engine does differently on a Citus coordinator (docs/scaling.md). A statement of one
 * organization is a single-shard (router) statement only when Citus can see, while planning, that
 * every distributed table it reads is restricted to that organization: a subquery correlated on
 * the record's organization_id (relations, custom fields) is not enough, a constant is.
 */

const detected = new WeakMap<object, Promise<boolean>>()

/** Whether db's database has the citus extension: asked once per knex instance, never on embedded Postgres. */
export function isCitus(db: Knex): Promise<boolean> {
  if (isEmbedded(db)) return Promise.resolve(false)
  let answer = detected.get(db.client)
  if (!answer) {
    answer = db.raw(`SELECT 1 FROM pg_extension WHERE extname = 'citus'`).then((result) => result.rows.length > 0)
    answer.catch(() => detected.delete(db.client))
    detected.set(db.client, answer)
  }
  return answer
}

// `<table>.organization_id = <record>.organization_id`: how the read model ties a related row (or
// a row related to that one) to its record's organization.
const CORRELATED_ORGANIZATION = /(\b[\w"]+)\.organization_id = [\w"]+\.organization_id\b/g

/**
 * The statement with each correlation on the record's organization replaced by the organization
 * itself, so that Citus routes it to the organization's shard (the rows it reads are all of that
 * organization already: its own conditions say so).
 */
export function routedTo(db: Knex, statement: Statement, organization: number): Statement {
  if (!Number.isSafeInteger(organization)) return statement
  const constant = (sql: string) => sql.replace(CORRELATED_ORGANIZATION, `$1.organization_id = ${organization}`)
  const { sql, bindings } = statement.raw.toSQL()
  return {
    raw: db.raw(constant(sql), bindings as Knex.RawBinding[]),
    ...(statement.native ? { native: { sql: constant(statement.native.sql), bindings: statement.native.bindings } } : {})
  }
}

/** The statement as the database should get it: on Citus routed to the organization's shard (routedTo), elsewhere as it is. */
export async function routed(knex: Knex, db: Knex, statement: Statement, organization: number | undefined): Promise<Statement> {
  return organization !== undefined && (await isCitus(knex)) ? routedTo(db, statement, organization) : statement
}
