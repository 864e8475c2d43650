import { BadRequest } from '@feathersjs/errors'
import type { HookContext } from '../declarations.js'
import { databaseOf, targetOrganization } from './tenant-scope.js'

export interface Reference {
  /** Tenant table the id points into (live rows only), or 'member' for a user of the organization. */
  table: string | 'member'
  /** Extra equality conditions on the referenced row, e.g. { type: 'deal' }. */
  where?: Record<string, unknown>
  /** What the error message calls the referenced record. */
  label?: string
}

const labelOf = (field: string, reference: Reference) =>
  reference.label ?? (reference.table === 'member' ? 'member' : field.replace(/_id$/, '').replace(/_/g, ' '))

/**
 * Ids a body references must be live records of the same organization: a reference is never
 * a way into another tenant. All references of a body are checked in one query.
 */
export const verifyReferences = (references: Record<string, Reference>) => async (context: HookContext) => {
  const data = (context.data ?? {}) as Record<string, unknown>
  const present = Object.entries(references).filter(([field]) => data[field] !== undefined && data[field] !== null)
  if (present.length === 0) return context

  const organizationId = await targetOrganization(context)
  // Inside the caller's transaction the check sees the rows that transaction wrote.
  const db = databaseOf(context)
  const probes = present.map(([field, reference]) => {
    const id = data[field]
    if (reference.table === 'member') {
      return db('organizations_users').select(db.raw('? as field', [field]))
        .where({ organization_id: organizationId, user_id: id })
    }
    return db(reference.table).select(db.raw('? as field', [field]))
      .where({ organization_id: organizationId, id, ...reference.where })
      .whereNull('deleted_at')
  })
  const [first, ...rest] = probes
  const rows: { field: string }[] = rest.length ? await first.unionAll(rest, true) : await first
  const found = new Set(rows.map((row) => row.field))
  const errors: Record<string, string> = {}
  for (const [field, reference] of present) {
    if (!found.has(field)) errors[field] = `must be a ${labelOf(field, reference)} of this organization`
  }
  if (Object.keys(errors).length) throw new BadRequest('Invalid reference', { errors })
  return context
}
