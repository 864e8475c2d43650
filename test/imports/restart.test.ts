import crypto from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { describe, it, expect } from 'vitest'
import { stringify } from 'csv-stringify/sync'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { createTenant } from '../helpers/fixtures.js'
import { upload } from './fixtures.js'

/**
 * An import survives the end of the process that runs it (issue 49): the first app stops right
 * after a chunk has committed, as a process killed there would; a new app on the same database
 * goes on after the last committed row. Every row is imported once.
 */
describe('an import across a restart', () => {
  it('when the process running an import stops after its second chunk, then a new process imports the rest, no row lost or imported twice', async () => {
    // Both apps on one database (the server's, or an embedded one on disk that the first closes before the second opens it) and one DATA_DIR, where the file is stored.
    const dataDir = path.join(os.tmpdir(), `crm-restart-${crypto.randomUUID()}`)
    const shared = process.env.DATABASE_URL ? { dataDir } : { databaseUrl: '', dataDir }
    const first: TestApp = await startApp(shared)
    const tenant = await createTenant(first, 'Restart')
    const file = Buffer.from(stringify([['First Name', 'Email'], ...Array.from({ length: 450 }, (_, i) => [`Person ${i}`, `p${i}@restart.test`])]))
    const created = (await upload(first, tenant, file, { resource: 'contacts', keys: 'email' })).body
    expect(created.preview).toMatchObject({ rows: 450, to_create: 450 })

    // The process "dies" once the second chunk has committed: what it would have done next never happens.
    const stopAfterSecondChunk = (record: any) => {
      if (record.id === created.id && record.rows_read === 200) throw new Error('the process stopped here')
    }
    first.app.service('imports').on('patched', stopAfterSecondChunk)
    const start = await first.http().post(`/imports/${created.id}`).set(tenant.key).set('X-Service-Method', 'start').send({})
    expect(start.status).toBe(200)
    // The app's own worker may have taken the job already: wait until its attempt has ended (a retry waits).
    const job = () => first.db('outbox_jobs').where({ topic: 'imports' }).whereRaw(`payload->>'import_id' = ?`, [String(created.id)]).first()
    for (let attempt = 0; attempt < 200 && !((await job())?.attempts >= 1 && (await job()).status === 'pending'); attempt++) {
      await first.app.get('outbox').deliverDue()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await job()).toMatchObject({ status: 'pending', attempts: 1, last_error: 'the process stopped here' })
    const midway = await first.db('imports').where({ id: created.id }).first()
    expect(midway).toMatchObject({ status: 'running', rows_read: 200, last_row: 200, rows_created: 200 })
    expect(await first.db('contacts').where({ organization_id: tenant.organization.id }).count({ n: '*' })).toEqual([{ n: 200 }])
    await first.close()

    const second: TestApp = await startApp(shared)
    try {
      // The retry is due now (a restart does not wait for the backoff of a failed attempt).
      await second.db('outbox_jobs').where({ topic: 'imports' }).whereRaw(`payload->>'import_id' = ?`, [String(created.id)]).update({ next_attempt_at: second.db.fn.now() })
      for (let attempt = 0; attempt < 200 && (await second.db('imports').where({ id: created.id }).first()).status === 'running'; attempt++) {
        await second.app.get('outbox').deliverDue()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const done = (await second.http().get(`/imports/${created.id}`).set(tenant.key)).body
      expect(done).toMatchObject({ status: 'completed', rows_read: 450, rows_created: 450, rows_updated: 0, rows_failed: 0 })
      const emails = (await second.db('contacts').where({ organization_id: tenant.organization.id }).select('email')).map((row) => row.email)
      expect(emails).toHaveLength(450)
      expect(new Set(emails).size).toBe(450)
    } finally {
      await second.close()
    }
  })
})
