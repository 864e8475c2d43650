/**
 * The bare server's SQL, written by hand: each answer is one statement in which Postgres renders
 * the JSON the API sends, field for field (the check mode of bench/run.ts compares them), and
 * node passes the text through. Table aliases are always `t` for the record's own row.
 *
 * $1 is the organization in every statement, and the related rows are read by it (not by
 * t.organization_id, the same value): so a Citus coordinator routes the whole statement to the
 * one node holding the organization (it plans a correlation on the distribution column as a
 * join across nodes, and refuses it).
 */

/** ISO 8601 in UTC with milliseconds, as the API writes timestamps. */
const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** `'name', alias.name, …` for json_build_object: columns whose JSON is Postgres's own (ints, text, booleans, jsonb). */
const plain = (alias: string, columns: string[]) => columns.map((column) => `'${column}', ${alias}.${column}`).join(', ')
/** The same for timestamps. */
const timestamps = (alias: string, columns: string[]) => columns.map((column) => `'${column}', ${iso(`${alias}.${column}`)}`).join(', ')
/** The same for dates, times and numerics, which the API sends as Postgres's text ('2026-11-01', '08:00:00', '100.50'). */
const texts = (alias: string, columns: string[]) => columns.map((column) => `'${column}', ${alias}.${column}::text`).join(', ')

/**
 * custom_fields_by_name: each live definition of the record's organization whose stored value
 * (custom_fields, keyed by the definition's key) is present and not null, under its name. An
 * empty store answers {} without reading the definitions, as the service does.
 */
const customFieldsByName = (entity: string) => `CASE WHEN t.custom_fields = '{}' THEN '{}'::json ELSE COALESCE((
    SELECT json_object_agg(d.name, t.custom_fields -> d.key ORDER BY d.position, d.id) FROM custom_fields d
    WHERE d.organization_id = $1 AND d.entity_type = '${entity}' AND d.deleted_at IS NULL
      AND jsonb_typeof(t.custom_fields -> d.key) <> 'null'), '{}') END`

const SOFT_DELETE = ['created_at', 'updated_at', 'deleted_at']

/** The copy of contacts with its columns and indexes but no triggers (bench/database.ts makes it). */
export const PLAIN_CONTACTS = 'bench_plain_contacts'

/** A contact as GET /contacts/:id, a contacts page and a contact write answer it. */
export const contactJson = `json_build_object(
  ${plain('t', [
    'id', 'organization_id', 'first_name', 'last_name', 'email', 'phone', 'phone_country_code', 'phone_country_iso', 'phone_e164', 'company_id',
    'owned_by_user_id', 'created_by_user_id', 'channel_whatsapp_wa_id', 'channel_instagram_user_id', 'channel_messenger_user_id',
    'channel_whatsapp_user_id', 'system_type', 'avatar_url', 'external_id'
  ])},
  ${timestamps('t', SOFT_DELETE)},
  'custom_fields_by_name', ${customFieldsByName('contact')})`

/**
 * A related row as a list joins it: the row of the same organization (users are global), live
 * (users have no soft delete), or null.
 */
const related = (table: string, alias: string, from: string, fields: string, tenant = true) =>
  `(SELECT json_build_object(${fields}) FROM ${table} ${alias} WHERE ${alias}.id = t.${from}` +
  (tenant ? ` AND ${alias}.organization_id = $1 AND ${alias}.deleted_at IS NULL)` : ')')

/** fastJoinForDealsList: company, contact, pipelineStage and owner, with the spec's fields. */
const DEAL_RELATIONS = [
  `'company', ${related('companies', 'co', 'company_id', plain('co', ['id', 'name', 'organization_id', 'created_by_user_id', 'owned_by_user_id']))}`,
  `'contact', ${related('contacts', 'ct', 'contact_id', plain('ct', ['id', 'first_name', 'last_name', 'email', 'phone', 'phone_country_code', 'company_id', 'avatar_url']))}`,
  `'pipelineStage', ${related('pipeline_stages', 'ps', 'pipeline_stage_id', plain('ps', ['id', 'name', 'pipeline_id']))}`,
  `'owner', ${related('users', 'ow', 'owned_by_user_id', plain('ow', ['id', 'first_name', 'last_name', 'email']), false)}`
].join(',\n  ')

/** GET /deals/:id (and a deal's write answer): the list relations, the pipeline and the deal's live products. */
const DEAL_RECORD_RELATIONS = [
  `'pipeline', ${related('pipelines', 'pl', 'pipeline_id', plain('pl', ['id', 'name']))}`,
  DEAL_RELATIONS,
  `'dealProducts', (SELECT COALESCE(json_agg(json_build_object(${plain('dp', ['id', 'description', 'discount_type', 'product_id', 'name', 'sku'])},
    ${texts('dp', ['quantity', 'price', 'discount_amount', 'discount_percentage', 'tax_percentage', 'total_amount_with_tax', 'total_amount_without_tax'])}) ORDER BY dp.id), '[]')
    FROM deal_products dp WHERE dp.deal_id = t.id AND dp.organization_id = $1 AND dp.deleted_at IS NULL)`
].join(',\n  ')

/** A deal, with its list relations when joined as a list joins, or a read by id's. */
export const dealJson = (joined: boolean | 'record') => `json_build_object(
  ${plain('t', [
    'id', 'organization_id', 'name', 'currency', 'status', 'pipeline_id', 'pipeline_stage_id', 'contact_id', 'company_id',
    'created_by_user_id', 'owned_by_user_id', 'external_id'
  ])},
  ${texts('t', ['amount', 'expected_close_date'])},
  ${timestamps('t', ['won_date', 'lost_date', ...SOFT_DELETE])},
  'custom_fields_by_name', ${customFieldsByName('deal')}${joined === 'record' ? `,\n  ${DEAL_RECORD_RELATIONS}` : joined ? `,\n  ${DEAL_RELATIONS}` : ''})`

const fullName = (alias: string) => `'full_name', concat_ws(' ', ${alias}.first_name, ${alias}.last_name)`

/** fastJoinForActivityList: the short forms of the two users, the deal, the contact and the company. */
const ACTIVITY_RELATIONS = [
  `'created_by_user', ${related('users', 'cu', 'created_by_user_id', `'id', cu.id, ${fullName('cu')}`, false)}`,
  `'assigned_to_user', ${related('users', 'au', 'assigned_to_user_id', `'id', au.id, ${fullName('au')}`, false)}`,
  `'deal', ${related('deals', 'de', 'deal_id', plain('de', ['id', 'name']))}`,
  `'contact', ${related('contacts', 'ct', 'contact_id', `'id', ct.id, ${fullName('ct')}`)}`,
  `'company', ${related('companies', 'co', 'company_id', plain('co', ['id', 'name']))}`
].join(',\n  ')

/** GET /activities/:id (and an activity's write answer): the richer single-record forms. */
const ACTIVITY_RECORD_RELATIONS = [
  `'created_by_user', ${related('users', 'cu', 'created_by_user_id', `'id', cu.id, ${fullName('cu')}, 'email', cu.email`, false)}`,
  `'assigned_to_user', ${related('users', 'au', 'assigned_to_user_id', `'id', au.id, ${fullName('au')}, 'email', au.email`, false)}`,
  `'deal', ${related('deals', 'de', 'deal_id', `${plain('de', ['id', 'name'])}, 'stage', (SELECT json_build_object('id', s.id, 'name', s.name) FROM pipeline_stages s WHERE s.organization_id = $1 AND s.id = de.pipeline_stage_id)`)}`,
  `'contact', ${related('contacts', 'ct', 'contact_id', `'id', ct.id, ${fullName('ct')}, 'email', ct.email`)}`,
  `'company', ${related('companies', 'co', 'company_id', plain('co', ['id', 'name', 'website']))}`
].join(',\n  ')

/** An activity, with its list relations when joined as a list joins, or a read by id's. */
export const activityJson = (joined: boolean | 'record') => `json_build_object(
  ${plain('t', [
    'id', 'organization_id', 'created_by_user_id', 'assigned_to_user_id', 'subject', 'note', 'public_description', 'location',
    'location_geocoded', 'duration', 'deal_id', 'contact_id', 'company_id', 'activity_type', 'activity_type_id', 'done', 'external_id'
  ])},
  ${texts('t', ['start_date', 'end_date', 'start_time', 'end_time'])},
  ${timestamps('t', SOFT_DELETE)}${joined === 'record' ? `,\n  ${ACTIVITY_RECORD_RELATIONS}` : joined ? `,\n  ${ACTIVITY_RELATIONS}` : ''})`

/** What a list may be filtered and sorted on, and how its rows and total are read. */
export interface ListResource {
  table: string
  /** Columns a query may filter on by equality (what the streams send; anything else is refused). */
  filters: string[]
  /** A date column a query may bound with $gte and $lte. */
  range?: string
  sorts: string[]
  /** The query flag that adds the list's relations. */
  joinFlag?: string
  json: (joined: boolean) => string
  /**
   * The trigger-kept counter the service reads the total from when the query filters on nothing
   * but the organization (record_counts) or the organization and the range (activity_day_counts).
   */
  dayCounts?: string
}

export const LISTS: Record<string, ListResource> = {
  contacts: { table: 'contacts', filters: ['owned_by_user_id', 'company_id'], sorts: ['id', 'created_at'], json: () => contactJson },
  deals: {
    table: 'deals', filters: ['status', 'pipeline_id', 'pipeline_stage_id', 'owned_by_user_id'], sorts: ['id', 'created_at', 'expected_close_date'],
    joinFlag: 'fastJoinForDealsList', json: dealJson
  },
  activities: {
    table: 'activities', filters: ['done', 'activity_type', 'assigned_to_user_id'], range: 'start_date',
    sorts: ['id', 'start_date', 'start_time', 'subject'], joinFlag: 'fastJoinForActivityList', json: activityJson, dayCounts: 'activity_day_counts'
  }
}

export class BadQuery extends Error {}

const PAGE_DEFAULT = 10
const PAGE_MAX = 100
const PAGING = new Set(['organization_id', '$limit', '$skip', '$sort'])

/**
 * A page of a list as the API answers it, {total, limit, skip, data}, in one statement: the
 * page's rows in the query's order with id as the tie-breaker (in the first key's direction, as
 * the service breaks ties), each rendered with its relations, and the total of the filter.
 */
export function pageStatement(list: ListResource, query: Record<string, any>): { text: string; values: unknown[] } {
  const values: unknown[] = [query.organization_id]
  const where = ['t.organization_id = $1', 't.deleted_at IS NULL']
  const add = (value: unknown) => `$${values.push(value)}`
  // The range's bounds, as conditions on a column to be named: the list's own, or the day counters'.
  const bounds: string[] = []
  let filtered = false
  for (const [key, value] of Object.entries(query)) {
    if (PAGING.has(key) || key === list.joinFlag) continue
    if (key === list.range && value && typeof value === 'object') {
      for (const [operator, bound] of Object.entries(value)) {
        if (operator !== '$gte' && operator !== '$lte') throw new BadQuery(`${key}.${operator} is not a range this server takes`)
        bounds.push(`${operator === '$gte' ? '>=' : '<='} ${add(bound)}::date`)
      }
      where.push(...bounds.map((bound) => `t.${key} ${bound}`))
    } else if (list.filters.includes(key) && (typeof value !== 'object' || value === null)) {
      where.push(`t.${key} = ${add(value)}`)
      filtered = true
    } else {
      throw new BadQuery(`${key} is not a filter this server takes`)
    }
  }
  const sort = Object.entries((query.$sort ?? {}) as Record<string, number>)
  for (const [column] of sort) if (!list.sorts.includes(column)) throw new BadQuery(`${column} is not a sort this server takes`)
  const direction = (value: number) => (Number(value) === -1 ? 'DESC' : 'ASC')
  const order = [...sort.map(([column, value]) => `t.${column} ${direction(value)}`)]
  if (!sort.some(([column]) => column === 'id')) order.push(`t.id ${direction(sort[0]?.[1] ?? 1)}`)
  const limit = add(Math.min(Number(query.$limit ?? PAGE_DEFAULT), PAGE_MAX))
  const skip = add(Number(query.$skip ?? 0))
  const conditions = where.join(' AND ')
  const text = `
    WITH page AS (SELECT t.* FROM ${list.table} t WHERE ${conditions} ORDER BY ${order.join(', ')} LIMIT ${limit} OFFSET ${skip})
    SELECT json_build_object(
      'total', ${totalOf(list, conditions, filtered, bounds)},
      'limit', ${limit}::int,
      'skip', ${skip}::int,
      'data', COALESCE((SELECT json_agg(${list.json(query[list.joinFlag ?? ''] === true)} ORDER BY ${order.join(', ')}) FROM page t), '[]')
    )::text AS body`
  return { text, values }
}

/**
 * The total as the service reads it: from the trigger-kept counters where it uses them (the
 * organization alone: record_counts; the organization and a date range of a day-counted list:
 * the day counts), else count(*) over the page's conditions.
 */
function totalOf(list: ListResource, conditions: string, filtered: boolean, bounds: string[]) {
  if (!filtered && bounds.length === 0) {
    return `(SELECT COALESCE(sum(live), 0) FROM record_counts WHERE organization_id = $1 AND table_name = '${list.table}')`
  }
  if (!filtered && list.dayCounts) {
    return `(SELECT COALESCE(sum(live), 0) FROM ${list.dayCounts} WHERE organization_id = $1 AND ${bounds.map((bound) => `day ${bound}`).join(' AND ')})`
  }
  return `(SELECT count(*) FROM ${list.table} t WHERE ${conditions})`
}

/**
 * Columns a write may set, by table: those the service, too, stores as sent (no column derived
 * from them in node, as phone_e164 is from phone, or won_date from status), which covers
 * what the streams send.
 */
export const WRITABLE: Record<string, string[]> = {
  contacts: ['first_name', 'last_name', 'email', 'company_id', 'owned_by_user_id'],
  deals: ['name', 'amount'],
  activities: ['subject', 'note', 'done']
}

/** The written columns of a body, refusing any this server does not write. */
export function writtenColumns(kind: string, body: Record<string, unknown>): [string, unknown][] {
  const entries = Object.entries(body ?? {})
  const refused = entries.find(([column]) => !WRITABLE[kind].includes(column))
  if (refused || entries.length === 0) throw new BadQuery(refused ? `${refused[0]} is not a field this server writes` : 'nothing to write')
  return entries
}
