import http from 'node:http'
import pg from 'pg'

/**
 * The benchmark's baseline: the least a server can do for GET /contacts/:id with the same row
 * lookup as the service (organization, id, live), answered as JSON. No framework, no auth.
 * Env: PORT, DATABASE_URL, ORGANIZATION_ID, DATABASE_POOL_SIZE (default 10, like the service).
 */
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) })
const organizationId = Number(process.env.ORGANIZATION_ID)

const server = http.createServer(async (req, res) => {
  const match = /^\/contacts\/(\d+)$/.exec(req.url ?? '')
  if (req.method !== 'GET' || !match) return send(res, 404, { message: 'Not found' })
  try {
    const { rows } = await pool.query(
      'SELECT * FROM contacts WHERE organization_id = $1 AND id = $2 AND deleted_at IS NULL LIMIT 1',
      [organizationId, Number(match[1])]
    )
    if (rows.length === 0) return send(res, 404, { message: `No record found for id '${match[1]}'` })
    send(res, 200, rows[0])
  } catch (error) {
    send(res, 500, { message: (error as Error).message })
  }
})

function send(res: http.ServerResponse, status: number, body: unknown) {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}

server.listen(Number(process.env.PORT ?? 3099), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))))
