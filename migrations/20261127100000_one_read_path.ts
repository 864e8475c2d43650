import type { Knex } from 'knex'
import * as recordChanges from './20261123001600_record_changes.js'
import * as dayCounts from './20261125000100_activity_day_counts.js'
import * as changeMarks from './20261126000200_change_marks.js'
import * as changeMarkPages from './20261126000400_change_marks_pages.js'
import { createCustomFieldRanges, dropCustomFieldRanges } from './20261123001400_sync.js'

/**
 * One read path (src/engine/read-model.ts): Postgres answers every read, so the trigger families
 * that fed the process caches and the stand-in statements go, and with them their cost on every
 * write. Dropped:
 * - change marks (the kept pages' and record texts' validity);
 * - record_changes: keyset pages and orders on updated_at use the (organization_id, updated_at, id)
 *   index of each table again (restored by record_changes' own down);
 * - activity_day_counts: a week's total is counted on the (organization_id, start_date) index;
 * - custom_field_ranges: a custom-field range is compared on the record's own values.
 * Kept, declared by the resources that need them (src/engine/trigger-families.ts): record_counts
 * and the contact name grams with their counts.
 */
export async function up(knex: Knex): Promise<void> {
  await changeMarkPages.down(knex)
  await changeMarks.down(knex)
  await dayCounts.down(knex)
  await recordChanges.down(knex)
  await dropCustomFieldRanges(knex)
}

export async function down(knex: Knex): Promise<void> {
  await createCustomFieldRanges(knex)
  await recordChanges.up(knex)
  await dayCounts.up(knex)
  await changeMarks.up(knex)
  await changeMarkPages.up(knex)
}
