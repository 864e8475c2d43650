import { BadRequest } from '@feathersjs/errors'
import type { Knex } from 'knex'

/**
 * The `search` custom methods (contacts by name, e-mail or phone; companies; products): a term
 * found inside a folded text, answered in the list envelope, in an order a person expects from
 * a search box, on Postgres's own indexes.
 *
 * Order: the records whose key starts with the term come first, group by group as the rule
 * declares them (a contact's full name, then its last name), each group in the order of its
 * key, ties by id; then every other record whose text contains the term, the most recently
 * created first (by id, descending). Texts compare byte by byte (the "C" collation) after
 * folding, whatever the database's locale. The other matches go by id, not by name, because
 * their walk must not depend on where the matches sit in the alphabet: every "Søren" matches
 * "oren", and a walk in name order would read every name before the s's to reach them.
 *
 * Total: exact up to SEARCH_TOTAL_CAP matches; above it `total` is the cap and `total_capped`
 * is true, and pages reach no further than the cap. The cap is what keeps a search's cost flat
 * whatever the size of the organization: the count stops there (first on the first group's
 * B-tree, where a common prefix reaches the cap without the trigram index), and the page is read
 * one of two ways, chosen inside the statement by that count:
 * - up to the cap: every match, found through the trigram index, ordered in memory;
 * - above it: each group walked in its order on its index, a page's worth at most. The walks
 *   stop at the first rows they need, and matches are then dense enough (more than the cap)
 *   for the walk of the other matches, in id order, to find its page soon.
 */
export const SEARCH_TOTAL_CAP = 1000

/** Matches whose `key` starts with the term, in the order of the key, then of `order`. */
export interface PrefixGroup {
  key: string
  order?: string[]
}

/**
 * How a resource searches, in SQL over its row (alias t). Each expression is an index's, so the
 * statement is served by them: `texts` by trigram GIN indexes on (organization_id, text) of the
 * live rows; each group's key and order by a B-tree on (organization_id, <key and order, each
 * COLLATE "C">, id) of the live rows; the other matches by the primary key.
 */
export interface SearchRule {
  /** The folded term, from the bound `:term` (e.g. search_fold(:term)). */
  term: string
  /** The folded texts a match contains the term in (any of them). */
  texts: string[]
  /** None: every match is one of the other matches, newest first. */
  prefixes: PrefixGroup[]
  /** A condition every match meets besides its organization and being live (the bound :term and the named bindings are at hand). */
  where?: string
}

export interface SearchPage {
  organizationId: number
  term: string
  limit: number
  skip: number
  /** Values of named bindings the rule's `where` uses. */
  bindings?: Record<string, Knex.Value>
}

/** A search as parts of one statement: its CTEs, the page of matched ids, and the capped total (named bindings). */
export interface SearchQueries {
  with: string
  page: string
  total: string
  capped: string
  bindings: Record<string, Knex.Value>
}

/** A user's search text as a LIKE pattern that matches it anywhere, with wildcards escaped (for a bound value). */
export const containsPattern = (term: string) => `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** The folded term (an SQL expression) as a LIKE pattern with its wildcards escaped. */
const escapedTerm = (term: string) => `replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_')`
const collated = (expression: string) => `(${expression}) COLLATE "C"`

/**
 * The page of matches (ids in search order, `position` 1..n) and the capped count of all
 * matches, as two subqueries of named bindings; the caller renders the records.
 */
export function searchQueries(table: string, rule: SearchRule, page: SearchPage): SearchQueries {
  const reach = page.skip + page.limit
  if (reach > SEARCH_TOTAL_CAP) {
    throw new BadRequest('Validation failed', {
      errors: { $skip: `a search pages through its first ${SEARCH_TOTAL_CAP} matches ($skip + $limit): narrow the term to reach others` }
    })
  }
  // Folded once (an InitPlan): a usable bound of the indexes, evaluated once, not per row.
  const term = '(SELECT term FROM folded)'
  const live = `t.organization_id = :organization AND t.deleted_at IS NULL${rule.where ? ` AND (${rule.where})` : ''}`
  // A range of the key's index, written out so that a generic plan uses it too; starts_with keeps it exact.
  const startsWith = (key: string) => `${collated(key)} >= ${term} AND ${collated(key)} < ${term} || chr(1114111) AND starts_with(${key}, ${term})`
  const notStartsWith = (key: string) => `NOT starts_with(${key}, ${term})`
  const contains = `(${rule.texts.map((text) => `${text} LIKE '%' || ${escapedTerm(term)} || '%'`).join(' OR ')})`
  const groups = [
    ...rule.prefixes.map((group, index) => ({
      condition: [startsWith(group.key), ...rule.prefixes.slice(0, index).map((earlier) => notStartsWith(earlier.key))],
      order: [group.key, ...(group.order ?? [])]
    })),
    { condition: [`(${rule.texts.map((text) => `strpos(${text}, ${term}) > 0`).join(' OR ')})`, ...rule.prefixes.map((group) => notStartsWith(group.key))], order: [] }
  ]
  const others = groups.length - 1
  const orderBy = (order: string[], index: number) => (index === others ? 't.id DESC' : [...order.map(collated), 't.id'].join(', '))
  // Above the cap: each group in its index order, concatenated; the Append under the LIMIT stops
  // once it has `reach` rows, so a group that fills the page leaves the next ones unread.
  const walks = groups.map((group, index) => `(SELECT t.id, ${index} AS grp FROM :table: AS t
      WHERE ${live} AND ${group.condition.join(' AND ')} AND (SELECT n FROM counted) > CAST(:cap AS integer)
      ORDER BY ${orderBy(group.order, index)} LIMIT CAST(:reach AS integer))`)
  // Up to the cap: every match is in `found`, with the texts its group and order need. `matches`
  // must be read through the trigram index's bitmap, whatever the statistics say: a B-tree walk
  // of the whole organization, filtering, can take seconds when the matches sit late in its
  // order. So it is planned as if read to the end (a CTE's plan is; reading still stops at
  // `found`'s limit), and it selects created_at, which no B-tree holding the search keys has, so
  // that an index-only walk of one is never the cheaper plan (after a burst of writes it was).
  const keys = [...new Set(groups.flatMap((group) => group.order))]
  const keyOf = (expression: string) => `k${keys.indexOf(expression)}`
  const groupOf = rule.prefixes.length === 0
    ? '0'
    : `CASE ${groups.slice(0, -1).map((group, index) => `WHEN starts_with(f.${keyOf(group.order[0])}, ${term}) THEN ${index}`).join(' ')} ELSE ${groups.length - 1} END`
  const width = Math.max(...groups.map((group) => group.order.length))
  const sortKey = (position: number) =>
    `CASE ${groups.map((group, index) => `WHEN grp = ${index} THEN ${group.order[position] ? `f.${keyOf(group.order[position])}` : 'NULL'}`).join(' ')} END COLLATE "C"`
  const few = `SELECT id, grp FROM (SELECT f.*, ${groupOf} AS grp FROM found AS f WHERE (SELECT n FROM counted) <= CAST(:cap AS integer)) AS f
      ORDER BY ${['grp', ...Array.from({ length: width }, (_, position) => sortKey(position)), `CASE WHEN grp = ${others} THEN -id ELSE id END`].join(', ')} LIMIT CAST(:reach AS integer)`
  const sql = `WITH folded AS (SELECT ${rule.term.replaceAll(':term', 'CAST(:term AS text)')} AS term),
    matches AS MATERIALIZED (
      SELECT ${['t.id', 't.created_at', ...keys.map((expression) => `${expression} AS ${keyOf(expression)}`)].join(', ')} FROM :table: AS t
      WHERE ${live} AND ${contains}),
    prefixed AS MATERIALIZED (${rule.prefixes.length === 0 ? 'SELECT 0 AS n' : `SELECT count(*) AS n FROM (SELECT 1 FROM :table: AS t
      WHERE ${live} AND ${groups[0].condition.join(' AND ')} LIMIT CAST(:cap AS integer) + 1) AS l`}),
    found AS MATERIALIZED (SELECT * FROM matches WHERE (SELECT n FROM prefixed) <= CAST(:cap AS integer) LIMIT CAST(:cap AS integer) + 1),
    counted AS MATERIALIZED (SELECT greatest((SELECT n FROM prefixed), count(*)) AS n FROM found),
    matched AS (SELECT id, row_number() OVER () AS position FROM (
      (${few}) UNION ALL (SELECT * FROM (${walks.join(' UNION ALL ')}) AS walked LIMIT CAST(:reach AS integer))) AS m)`
  return {
    with: sql,
    page: `SELECT id, position FROM matched WHERE position > CAST(:skip AS integer) ORDER BY position LIMIT CAST(:limit AS integer)`,
    total: `SELECT least(n, CAST(:cap AS integer)) FROM counted`,
    capped: `SELECT n > CAST(:cap AS integer) FROM counted`,
    bindings: { ...page.bindings, table, organization: page.organizationId, term: page.term, cap: SEARCH_TOTAL_CAP, reach, skip: page.skip, limit: page.limit }
  }
}
