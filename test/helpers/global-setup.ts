import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { MEMORY_DATABASE, createKnex, migrate } from '../../src/db.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated embedded database, dumped: every startApp() on the embedded database starts as a copy of it. */
    embeddedTemplate: string
  }
}

/**
 * With DATABASE_URL set, the schema is migrated once before the test files run against that
 * server. Without it, one in-memory embedded Postgres is migrated here and dumped to a file, and
 * every test app starts from a copy of that dump instead of creating and migrating its own.
 */
export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL
  if (url) {
    const db = await createKnex(url, './data')
    try {
      await migrate(db)
    } finally {
      await db.destroy()
    }
    project.provide('embeddedTemplate', '')
    return
  }
  const db = await createKnex(MEMORY_DATABASE, '')
  const file = path.join(os.tmpdir(), `crm-test-template-${process.pid}.tar`)
  try {
    await migrate(db)
    const { pglite } = (db.client.config.connection as () => { pglite: { dumpDataDir: (compression: 'none') => Promise<Blob> } })()
    fs.writeFileSync(file, Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer()))
  } finally {
    await db.destroy()
  }
  project.provide('embeddedTemplate', file)
  return () => fs.rmSync(file, { force: true })
}
