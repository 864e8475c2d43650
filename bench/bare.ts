/**
 * The bare server the benchmark compares the service with: node:http and a pg Pool, no framework,
 * no authentication, one statement per request whose JSON Postgres renders (bench/bare-sql.ts);
 * node passes the text through. It answers what the benchmark's streams ask:
 *
 *   GET   /contacts/:id                           the contact
 *   GET   /contacts | /deals | /activities        a page, the query in the body as {query} (as the API takes it)
 *   POST  /contacts | /plain-contacts             a created contact (into contacts, or its plain copy)
 *   PATCH /contacts/:id | /plain-contacts/:id | /deals/:id | /activities/:id   the updated record
 *
 * Env: PORT, DATABASE_URL, ORGANIZATION_ID and USER_ID (whose API key the service is called with:
 * the organization of reads by id and writes, the creator of created contacts), DATABASE_POOL_SIZE
 * (default 10, the service's default).
 */
import http from 'node:http'
import pg from 'pg'
import { BadQuery, LISTS, PLAIN_CONTACTS, activityJson, contactJson, dealJson, pageStatement, writtenColumns } from './bare-sql.js'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) })
const organizationId = Number(process.env.ORGANIZATION_ID)
const userId = Number(process.env.USER_ID)

/** Tables a write may go to, by the path's first segment, and how their rows are answered. */
const WRITTEN: Record<string, { table: string; kind: string; json: string }> = {
  contacts: { table: 'contacts', kind: 'contacts', json: contactJson },
  'plain-contacts': { table: PLAIN_CONTACTS, kind: 'contacts', json: contactJson },
  // A write answers the record as a read by id does, with its relations.
  deals: { table: 'deals', kind: 'deals', json: dealJson('record') },
  activities: { table: 'activities', kind: 'activities', json: activityJson('record') }
}

const CONTACT_BY_ID = `SELECT ${contactJson}::text AS body FROM contacts t WHERE t.organization_id = $1 AND t.id = $2 AND t.deleted_at IS NULL`

interface Answer {
  status: number
  body: string
}

const notFound = (id: string): Answer => ({ status: 404, body: JSON.stringify({ name: 'NotFound', message: `No record found for id '${id}'`, code: 404 }) })

/** Statement names by text: each shape of statement is parsed once per connection, as the service's named statements are. */
const names = new Map<string, string>()

/** One statement's single text column, or undefined when it returned no row. */
async function bodyOf(text: string, values: unknown[]): Promise<string | undefined> {
  let name = names.get(text)
  if (!name) names.set(text, (name = `bare ${names.size}`))
  const { rows } = await pool.query<{ body: string }>({ name, text, values })
  return rows[0]?.body
}

async function answer(method: string, url: string, body: any): Promise<Answer> {
  const [, collection, id] = /^\/([a-z-]+)(?:\/(\d+))?$/.exec(url) ?? []
  if (method === 'GET' && collection === 'contacts' && id) {
    const record = await bodyOf(CONTACT_BY_ID, [organizationId, Number(id)])
    return record ? { status: 200, body: record } : notFound(id)
  }
  if (method === 'GET' && !id && LISTS[collection]) {
    const { text, values } = pageStatement(LISTS[collection], body?.query ?? {})
    return { status: 200, body: (await bodyOf(text, values))! }
  }
  const written = WRITTEN[collection]
  // A write returns its row and an outer SELECT renders it: Citus refuses a RETURNING list with
  // subqueries (the relations) or functions that are not immutable (to_char).
  if (method === 'POST' && !id && written?.kind === 'contacts') {
    const columns = writtenColumns(written.kind, body)
    // As the service creates a contact: its organization, its creator, its system type.
    const text = `WITH t AS (INSERT INTO ${written.table} (organization_id, created_by_user_id, system_type, ${columns.map(([column]) => column).join(', ')})
      VALUES ($1, $2, 'contact', ${columns.map((_, i) => `$${i + 3}`).join(', ')}) RETURNING *) SELECT ${written.json}::text AS body FROM t`
    return { status: 201, body: (await bodyOf(text, [organizationId, userId, ...columns.map(([, value]) => value)]))! }
  }
  if (method === 'PATCH' && id && written) {
    const columns = writtenColumns(written.kind, body)
    const text = `WITH t AS (UPDATE ${written.table} AS t SET ${columns.map(([column], i) => `${column} = $${i + 3}`).join(', ')}, updated_at = now()
      WHERE t.organization_id = $1 AND t.id = $2 AND t.deleted_at IS NULL RETURNING *) SELECT ${written.json}::text AS body FROM t`
    const record = await bodyOf(text, [organizationId, Number(id), ...columns.map(([, value]) => value)])
    return record ? { status: 200, body: record } : notFound(id)
  }
  return { status: 404, body: JSON.stringify({ name: 'NotFound', message: `${method} ${url} is not served here`, code: 404 }) }
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', async () => {
    let result: Answer
    try {
      const text = Buffer.concat(chunks).toString('utf8')
      result = await answer(req.method ?? 'GET', req.url ?? '/', text ? JSON.parse(text) : undefined)
    } catch (error) {
      const status = error instanceof BadQuery || error instanceof SyntaxError ? 400 : 500
      result = { status, body: JSON.stringify({ name: status === 400 ? 'BadRequest' : 'GeneralError', message: (error as Error).message, code: status }) }
    }
    res.writeHead(result.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(result.body) })
    res.end(result.body)
  })
})

// The service sums a week's total from the day counts only in a schema that keeps them (an older
// checkout measured with --service-dir); otherwise it counts, and so does this server.
const { rows: [dayCounts] } = await pool.query("SELECT to_regclass('activity_day_counts') IS NOT NULL AS present")
if (!dayCounts.present) delete LISTS.activities.dayCounts
server.listen(Number(process.env.PORT ?? 3099), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))))
