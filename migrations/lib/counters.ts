/**
 * Counter tables kept by triggers in the writer's own transaction (record_counts,
 * activity_day_counts, change_marks, contact_name_gram_counts): a counter is the sum of its rows
 * over slots, and each backend adds to its own slot, so that concurrent writers of one
 * organization seldom wait on one row.
 */
export const COUNTER_SLOT = 'pg_backend_pid() % 16'

/**
 * The statement adding the rows `selectDeltas` gives (the key columns, the slot, the delta, in
 * that order) to the counters of `table`, whose primary key is `keys` and the slot.
 */
export const addToCounters = (table: string, keys: string[], counter: string) => (selectDeltas: string) => `
  INSERT INTO ${table} AS c (${[...keys, 'slot', counter].join(', ')})
  ${selectDeltas}
  ON CONFLICT (${[...keys, 'slot'].join(', ')}) DO UPDATE SET ${counter} = c.${counter} + EXCLUDED.${counter}`
