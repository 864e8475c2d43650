import type { TestProject } from 'vitest/node'
import { createKnex, migrate, migratedTemplate } from '../../src/db.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated embedded database, dumped: every startApp() on the embedded database starts as a copy of it. */
    embeddedTemplate: string
  }
}

/**
 * With DATABASE_URL set, the schema is migrated once before the test files run against that
 * server. Without it, every test app starts as a copy of the migrated template a fresh embedded
 * data directory starts from (made on first need, kept for later runs) instead of creating and
 * migrating its own.
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
  const template = await migratedTemplate()
  if (!template) throw new Error('The tests need a migrated template in node_modules/.cache/crm-api/, which cannot be written')
  project.provide('embeddedTemplate', template)
}
