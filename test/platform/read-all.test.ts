import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApp } from '../helpers/app.js'
import type { TestApp } from '../helpers/app.js'
import { readAll } from '../../src/db.js'

/**
 * readAll (src/db.ts): independent reads in parallel on the pool, one after the other inside a
 * transaction, whose one connection cannot run two statements at once (pg queues the second and
 * warns that pg@9 will refuse it). Used by the reservation slots and by a predefined message's
 * placeholders, which an automation fills inside its write's transaction.
 */
describe('readAll', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startApp()
  })
  afterAll(async () => t?.close())

  /** Reads that record when each starts and ends. */
  const tracked = (log: string[], names: string[], run: (name: string) => PromiseLike<unknown>) =>
    names.map((name) => async () => {
      log.push(`start ${name}`)
      const result = await run(name)
      log.push(`end ${name}`)
      return result
    })

  it('runs the reads one after the other inside a transaction, and answers them in order', async () => {
    const log: string[] = []
    const results = await t.db.transaction((trx) =>
      readAll<unknown[]>(trx, tracked(log, ['a', 'b', 'c'], (name) => trx.raw(`SELECT '${name}' AS name`).then((r: any) => r.rows[0].name))))
    expect(results).toEqual(['a', 'b', 'c'])
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
  })

  it('starts them all at once on the pool', async () => {
    const log: string[] = []
    const results = await readAll<unknown[]>(t.db, tracked(log, ['a', 'b'], (name) => t.db.raw(`SELECT '${name}' AS name`).then((r: any) => r.rows[0].name)))
    expect(results).toEqual(['a', 'b'])
    expect(log.slice(0, 2)).toEqual(['start a', 'start b'])
  })
})
