/**
 * The tables whose writes change marks count (migration 20261126000200_change_marks) and the
 * triggers that count them: the migration creates these, and RecordService trusts a list's mark
 * only where its relation tables carry every one of them (marksCover in src/services/joins.ts).
 */
export const MARKED_TENANT_TABLES = ['companies', 'contacts', 'deals', 'pipeline_stages', 'reservation_services', 'reservation_resources']
/** Global tables: their writes count under organization 0. */
export const MARKED_GLOBAL_TABLES = ['users']

export interface MarkTrigger {
  name: string
  event: 'INSERT' | 'UPDATE' | 'DELETE' | 'TRUNCATE'
  referencing?: string
  /** The counting function it calls. */
  fn: string
}

/** The four triggers of a marked table, counting by organization (tenant) or under organization 0. */
export function markTriggers(table: string, tenant: boolean): MarkTrigger[] {
  const kind = tenant ? 'tenant' : 'global'
  return [
    { name: `${table}_marks_inserted`, event: 'INSERT', referencing: 'NEW TABLE AS changed_rows', fn: `change_marks_${kind}` },
    { name: `${table}_marks_updated`, event: 'UPDATE', referencing: tenant ? 'OLD TABLE AS old_rows NEW TABLE AS changed_rows' : 'NEW TABLE AS changed_rows', fn: tenant ? 'change_marks_tenant_updated' : 'change_marks_global' },
    { name: `${table}_marks_deleted`, event: 'DELETE', referencing: 'OLD TABLE AS changed_rows', fn: `change_marks_${kind}` },
    { name: `${table}_marks_truncated`, event: 'TRUNCATE', fn: `change_marks_${kind}_truncated` }
  ]
}
