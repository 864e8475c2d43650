import { createKnex, migrate } from '../../src/db.js'

/**
 * With DATABASE_URL set, the schema is migrated once before the test files run against that
 * server. Without it, every test file migrates its own in-memory embedded Postgres.
 */
export default async function setup() {
  const url = process.env.DATABASE_URL
  if (!url) return
  const db = await createKnex(url, './data')
  try {
    await migrate(db)
  } finally {
    await db.destroy()
  }
}
