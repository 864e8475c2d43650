import crypto from 'node:crypto'
import pg from 'pg'

export interface ScratchDatabase {
  url: string
  drop: () => Promise<void>
}

/** A new, empty database on the PostgreSQL server of serverUrl, for a test that needs its own. */
export async function scratchDatabase(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  const url = new URL(serverUrl)
  const name = `${prefix}_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
  url.pathname = '/postgres'
  const admin = url.toString()
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await run(`CREATE DATABASE ${name}`)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}
