import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { migrate } from '../../src/db.js'
import { citusTableType } from '../../migrations/lib/citus.js'

// Runs on a Citus coordinator only (npm run test:citus, vitest.citus.config.ts). A database
// restored from a single PostgreSQL server into a coordinator has run every migration already,
// distribution included (a no-op where it ran): running the migrations places what is not
// placed yet (docs/scaling.md, "Converting an existing single-node database").
describe('converting a single-node database on Citus', () => {
  let t: TestApp

  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => {
    await t.db.raw('DROP TABLE IF EXISTS restored_notes')
    await t.close()
  })

  it('when tables of a restored database are plain tables of the coordinator, then running the migrations distributes a tenant table among the others, with its rows', async () => {
    // As a restore leaves them: plain tables holding rows, every migration recorded as run.
    await t.db.raw('CREATE TABLE restored_notes (organization_id integer NOT NULL, id integer NOT NULL, body text, PRIMARY KEY (organization_id, id))')
    await t.db.raw(`INSERT INTO restored_notes SELECT 1 + i % 7, i, 'note ' || i FROM generate_series(1, 500) AS i`)
    expect(await citusTableType(t.db, 'restored_notes')).toBeUndefined()

    await migrate(t.app.get('backgroundKnex'))

    expect(await citusTableType(t.db, 'restored_notes')).toBe('hash')
    const { rows: [colocated] } = await t.db.raw(
      `SELECT (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'restored_notes'::regclass) =
              (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'contacts'::regclass) AS same`
    )
    expect(colocated.same).toBe(true)
    expect(Number((await t.db('restored_notes').count({ n: '*' }).first())!.n)).toBe(500)
    const { rows: shards } = await t.db.raw(`SELECT count(DISTINCT nodeport) AS nodes FROM citus_shards WHERE table_name = 'restored_notes'::regclass`)
    expect(Number(shards[0].nodes)).toBe(2)

    // Once everything is placed, another run changes nothing.
    await migrate(t.app.get('backgroundKnex'))
    expect(await citusTableType(t.db, 'restored_notes')).toBe('hash')
  })
})
