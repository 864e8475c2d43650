import type { Knex } from 'knex'

/**
 * The tables whose writes change marks count (migration 20261126000200_change_marks) and the
 * triggers that count them: the migration creates these, and RecordService trusts a list's mark
 * only where its relation tables carry every one of them (marksCover in src/services/joins.ts).
 */
export const MARKED_TENANT_TABLES = ['companies', 'contacts', 'deals', 'pipeline_stages', 'reservation_services', 'reservation_resources']
/** Global tables: their writes count under organization 0. */
export const MARKED_GLOBAL_TABLES = ['users']
/**
 * Tenant tables marked later (migration 20261126000400_change_marks_pages) for the page cache
 * (src/services/record-pages.ts): a list's own table and the custom-field definitions its
 * records' texts are written with.
 */
export const MARKED_PAGE_TABLES = ['activities', 'custom_fields']

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

/** Creates the four triggers of a marked table (their functions are the change_marks migration's). */
export async function createMarkTriggers(knex: Knex, table: string, tenant: boolean) {
  for (const trigger of markTriggers(table, tenant)) {
    await knex.raw(`CREATE TRIGGER ${trigger.name} AFTER ${trigger.event} ON ${table}
      ${trigger.referencing ? `REFERENCING ${trigger.referencing}` : ''} FOR EACH STATEMENT EXECUTE FUNCTION ${trigger.fn}()`)
  }
}

export async function dropMarkTriggers(knex: Knex, table: string, tenant: boolean) {
  for (const trigger of markTriggers(table, tenant)) await knex.raw(`DROP TRIGGER IF EXISTS ${trigger.name} ON ${table}`)
}
