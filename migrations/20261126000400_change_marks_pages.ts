import type { Knex } from 'knex'
import { MARKED_PAGE_TABLES, createMarkTriggers, dropMarkTriggers } from './lib/change-marks.js'

/**
 * Change marks (migration 20261126000200) on two more tables, for the page cache
 * (src/services/record-pages.ts): activities, whose week pages are the calendar every user opens,
 * and custom_fields, whose definitions name the custom-field values a record's text carries. A
 * page is kept only where its own table, its relations' tables and (for a resource with custom
 * fields) custom_fields all count their writes, so these triggers are what lets a list of
 * activities, or of any resource with custom fields, be kept at all.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of MARKED_PAGE_TABLES) await createMarkTriggers(knex, table, true)
}

export async function down(knex: Knex): Promise<void> {
  for (const table of MARKED_PAGE_TABLES) await dropMarkTriggers(knex, table, true)
}
