import crypto from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { MEMORY_DATABASE, createKnex, migrate } from '../../src/db.js'
import { scratchDatabase } from '../helpers/databases.js'
import type { ScratchDatabase } from '../helpers/databases.js'
import { run } from '../helpers/process.js'
import type { Spawned } from '../helpers/process.js'

/**
 * The trigger families a resource declares (src/engine/trigger-families.ts) hold its exact totals
 * and its name search: a database without one would answer wrong totals, so the service refuses
 * to start on it, with one line saying what is missing.
 */
describe('declared trigger families', () => {
  const spawned: Spawned[] = []
  const scratches: ScratchDatabase[] = []

  afterAll(async () => {
    for (const process of spawned) process.kill()
    for (const scratch of scratches) await scratch.drop()
  })

  it('when the record_counts trigger of contacts is missing, then the app does not set up and names it', async () => {
    const app = await createApp({ databaseUrl: MEMORY_DATABASE, dataDir: path.join(os.tmpdir(), `crm-test-${crypto.randomUUID()}`) })
    const db = app.get('knex')
    try {
      await migrate(db)
      await db.raw('DROP TRIGGER contacts_count_inserted ON contacts')
      await expect(app.setup()).rejects.toThrow('The database lacks the record_counts triggers of contacts (contacts_count_inserted on contacts): apply the migrations (npm run migrate)')
    } finally {
      await db.destroy()
    }
  }, 120_000)

  it('when a record-count trigger is missing, then `npm start` prints that one line and exits 1', async () => {
    if (!process.env.DATABASE_URL) return
    const scratch = await scratchDatabase(process.env.DATABASE_URL, 'crm_triggers_test')
    scratches.push(scratch)
    const db = await createKnex(scratch.url, './data')
    try {
      await migrate(db)
      await db.raw('DROP TRIGGER companies_count_deleted ON companies')
    } finally {
      await db.destroy()
    }
    const server = run(process.execPath, ['--import', 'tsx', 'src/index.ts'], { DATABASE_URL: scratch.url, PORT: '0', LOG_LEVEL: 'warn' })
    spawned.push(server)
    expect(await server.exited).toBe(1)
    const { stderr } = server.output()
    expect(stderr.trim().split('\n')).toEqual([
      'Error: The database lacks the record_counts triggers of companies (companies_count_deleted on companies): apply the migrations (npm run migrate)'
    ])
  }, 60_000)
})
