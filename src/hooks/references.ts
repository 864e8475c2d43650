import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'
import type { Knex } from 'knex'
import { allOf, guardWrite } from '../engine/write-guards.js'
import type { Condition } from '../engine/write-guards.js'
import { quote } from '../engine/catalog.js'
import { targetOrganization } from './tenant-scope.js'
import { databaseOf } from '../db.js'

export interface Reference {
  /** Tenant table the id points into (live rows only), or 'member' for a user of the organization. */
  table: string | 'member'
  /** Extra equality conditions on the referenced row, e.g. { type: 'deal' }. */
  where?: Record<string, Knex.Value>
  /** What the error message calls the referenced record. */
  label?: string
}

const labelOf = (field: string, reference: Reference) =>
  reference.label ?? (reference.table === 'member' ? 'member' : field.replace(/_id$/, '').replace(/_/g, ' '))

/** The reference errors of each record, by index: {"3": {company_id: "must be a company of this organization"}}. */
export type ErrorsByIndex = Record<string, Record<string, string>>

/**
 * Ids a body references must be live records of the same organization: a reference is never
 * a way into another tenant. All references of a body are checked in one query. With `inWrite`,
 * a single write of a service that takes write guards checks them inside its own statement
 * instead: only for a chain where nothing between this hook and the write relies on them.
 */
export const verifyReferences = (references: Record<string, Reference>, { inWrite = false } = {}) => async (context: HookContext) => {
  const data = (context.data ?? {}) as Record<string, unknown>
  const present = Object.entries(references).filter(([field]) => data[field] !== undefined && data[field] !== null)
  if (present.length === 0) return context
  const organizationId = await targetOrganization(context)
  const check = async () => {
    const errors = await referenceErrors(context, references, organizationId, [data])
    if (errors[0]) throw new BadRequest('Invalid reference', { errors: errors[0] })
  }
  if (!inWrite) {
    await check()
    return context
  }
  const holds = allOf(present.map(([field, reference]) => liveReference(reference, organizationId, data[field] as Knex.RawBinding)))
  if (!guardWrite(context, { holds, check })) await check()
  return context
}

/**
 * What a reference may point at in the organization: the table, its id column, and the condition
 * on its rows (live records of the organization, or its memberships), shared by the check of one
 * body inside its write and the check of a batch by query.
 */
function referable(reference: Reference, organizationId: number): { table: string; id: string; condition: Condition } {
  if (reference.table === 'member') return { table: 'organizations_users', id: 'user_id', condition: { sql: 'organization_id = ?', bindings: [organizationId] } }
  const extra = Object.entries(reference.where ?? {})
  return {
    table: reference.table,
    id: 'id',
    condition: {
      sql: `organization_id = ?${extra.map(([column, value]) => ` AND ${quote(column)} ${value === null ? 'IS NULL' : '= ?'}`).join('')} AND deleted_at IS NULL`,
      bindings: [organizationId, ...extra.map(([, value]) => value).filter((value) => value !== null)]
    }
  }
}

/** EXISTS: the id is a live record (or a member) of the organization. */
function liveReference(reference: Reference, organizationId: number, id: Knex.RawBinding): Condition {
  const { table, id: idColumn, condition } = referable(reference, organizationId)
  return { sql: `EXISTS (SELECT 1 FROM ${quote(table)} WHERE ${condition.sql} AND ${quote(idColumn)} = ?)`, bindings: [...condition.bindings, id] }
}

/**
 * The references of many records of one organization (a batch), checked in one query whatever
 * the number of records: the errors of each record that points outside the organization, by index.
 */
export async function referenceErrors(
  context: HookContext,
  references: Record<string, Reference>,
  organizationId: number,
  records: Record<string, unknown>[]
): Promise<ErrorsByIndex> {
  const idsOf = (field: string) => [...new Set(records.map((record) => record[field]).filter((id) => id !== undefined && id !== null))]
  const present = Object.entries(references).filter(([field]) => idsOf(field).length > 0)
  if (present.length === 0) return {}
  // Inside the caller's transaction the check sees the rows that transaction wrote.
  const db = databaseOf(context.params, context.app.get('knex'))
  const probes = present.map(([field, reference]) => {
    const { table, id, condition } = referable(reference, organizationId)
    return db(table).select(db.raw('? as field', [field]), `${id} as id`)
      .whereRaw(condition.sql, condition.bindings).whereIn(id, idsOf(field) as number[])
  })
  const [first, ...rest] = probes
  const rows: { field: string; id: number }[] = rest.length ? await first.unionAll(rest, true) : await first
  const found = new Set(rows.map((row) => `${row.field}:${row.id}`))
  const errors: ErrorsByIndex = {}
  records.forEach((record, index) => {
    for (const [field, reference] of present) {
      const id = record[field]
      if (id === undefined || id === null || found.has(`${field}:${id}`)) continue
      ;(errors[index] ??= {})[field] = `must be a ${labelOf(field, reference)} of this organization`
    }
  })
  return errors
}
