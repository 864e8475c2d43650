import crypto from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import request from 'supertest'
import { expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { MEMORY_DATABASE, migrate } from '../../src/db.js'

// The server binds its port before the services are set up (src/index.ts): a health check that
// came in between must not report a service that cannot answer yet.
it('when GET /health comes before the app is set up, then it is a 503 "starting"; once set up, 200 "ok"', async () => {
  const databaseUrl = process.env.DATABASE_URL || MEMORY_DATABASE
  const app = await createApp({ databaseUrl, dataDir: path.join(os.tmpdir(), `crm-test-${crypto.randomUUID()}`) })
  try {
    const http = request(app.callback())
    const early = await http.get('/health')
    expect(early.status).toBe(503)
    expect(early.body).toEqual({ status: 'starting' })
    if (databaseUrl === MEMORY_DATABASE) await migrate(app.get('knex'))
    await app.setup()
    const ready = await http.get('/health')
    expect(ready.status).toBe(200)
    expect(ready.body).toEqual({ status: 'ok' })
  } finally {
    await app.teardown()
  }
})
