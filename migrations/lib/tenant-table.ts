import type { Knex } from 'knex'
import { distributeTenantTable, isDistributed } from './citus.js'

/**
 * Every timestamp of the service keeps milliseconds (timestamptz(3)), as the API speaks them: a
 * timestamp read back and used as a filter then matches the very row it came from. Use it for
 * any timestamp column a migration adds.
 */
export const MILLISECONDS = { useTz: true, precision: 3 } as const

/**
 * Creates a table owned by one organization, with millisecond timestamps. The tenant id leads the primary key and every
 * reference to the table goes through (organization_id, id), so the schema can be distributed
 * by organization (Citus) and a reference can never point into another tenant.
 */
export async function tenantTable(
  knex: Knex,
  name: string,
  columns: (t: Knex.CreateTableBuilder) => void,
  { softDelete = true }: { softDelete?: boolean } = {}
) {
  const create = knex.schema.createTable(name, (t) => {
    t.increments('id', { primaryKey: false })
    t.integer('organization_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE')
    columns(t)
    t.timestamp('created_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    t.timestamp('updated_at', MILLISECONDS).notNullable().defaultTo(knex.fn.now())
    if (softDelete) t.timestamp('deleted_at', MILLISECONDS)
    t.primary(['organization_id', 'id'])
  })
  if (!(await isDistributed(knex))) {
    await create
    return
  }
  // On a distributed schema, a plain table cannot reference a distributed one: the table is
  // created, distributed, and only then given its keys and indexes (knex's later statements).
  const [table, ...rest] = create.toSQL()
  await knex.raw(table.sql, table.bindings as Knex.RawBinding[])
  await distributeTenantTable(knex, name)
  for (const statement of rest) await knex.raw(statement.sql, statement.bindings as Knex.RawBinding[])
}

/** A reference from one tenant table to another, within the same organization. */
export function tenantReference(
  t: Knex.CreateTableBuilder | Knex.AlterTableBuilder,
  column: string,
  table: string,
  onDelete: 'RESTRICT' | 'CASCADE' | 'NO ACTION' = 'NO ACTION'
) {
  t.foreign(['organization_id', column]).references(['organization_id', 'id']).inTable(table).onDelete(onDelete)
}
