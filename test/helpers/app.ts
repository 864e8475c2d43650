import crypto from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import request from 'supertest'
import { inject } from 'vitest'
import knex from 'knex'
import type { Knex } from 'knex'
import { createApp } from '../../src/app.js'
import { MEMORY_DATABASE, migrate } from '../../src/db.js'
import type { Application, Configuration } from '../../src/declarations.js'

export interface TestApp {
  app: Application
  db: Knex
  http: () => request.Agent
  close: () => Promise<void>
}

/**
 * The real application, in-process, on the real database: the Postgres server named by
 * DATABASE_URL, or a fresh in-memory embedded Postgres of its own, migrated (a copy of the one
 * global setup migrated).
 */
export async function startApp(overrides: Partial<Configuration> = {}): Promise<TestApp> {
  const databaseUrl = process.env.DATABASE_URL || `${MEMORY_DATABASE}${inject('embeddedTemplate') ?? ''}`
  const app = await createApp({
    databaseUrl,
    dataDir: path.join(os.tmpdir(), `crm-test-${crypto.randomUUID()}`),
    // Organization ids repeat across fresh test databases: never share rate-limit state in Redis.
    rateLimitPrefix: `crm-test:${crypto.randomUUID()}:`,
    // Nor the events channel: each test app hears only its own events unless a test says otherwise.
    eventsChannel: `crm-test:${crypto.randomUUID()}:events`,
    ...overrides
  })
  const requests = app.get('knex')
  // The copy of global setup's database is migrated; a database an override names may not be.
  if (!process.env.DATABASE_URL && app.get('databaseUrl') !== databaseUrl) await migrate(requests)
  // On Citus the requests' pool refuses statements that span shards (CITUS_MULTI_SHARD_LEVEL);
  // what a test reads or sets up itself across organizations goes through a pool of its own.
  const db = app.get('citusMultiShardLevel') === 'off' ? requests : knex({ client: 'pg', connection: requests.client.config.connection, pool: { min: 0, max: 4 } })
  await app.setup()
  const callback = app.callback()
  return {
    app,
    db,
    http: () => request.agent(callback),
    close: async () => {
      await app.teardown()
      if (db !== requests) await db.destroy()
    }
  }
}

/**
 * Counts the SQL statements the app's knex runs while fn runs, with their bindings (for an
 * EXPLAIN of what a call ran). Background work (the outbox worker, the sweeps) runs on the
 * background knex (src/db.ts): every statement counted here is the call's.
 */
export async function countQueries<T>(db: Knex, fn: () => Promise<T>): Promise<{ result: T; count: number; statements: { sql: string; bindings: unknown[] }[] }> {
  const statements: { sql: string; bindings: unknown[] }[] = []
  const listener = (query: { sql: string; bindings: unknown[] }) => {
    statements.push({ sql: query.sql, bindings: query.bindings })
  }
  db.on('query', listener)
  try {
    const result = await fn()
    return { result, count: statements.length, statements }
  } finally {
    db.removeListener('query', listener)
  }
}

/**
 * The result of a call and the plan (EXPLAIN) of the last statement it ran: the call's own read,
 * which its authentication, when that reads at all, comes before.
 */
export async function planOfCall<T>(db: Knex, fn: () => Promise<T>): Promise<{ result: T; plan: string }> {
  const { result, statements } = await countQueries(db, fn)
  const read = statements.at(-1)
  if (!read) throw new Error('the call ran no statement')
  const rows = (await db.raw(`EXPLAIN ${read.sql.replace(/\$\d+/g, '?')}`, read.bindings as any[])).rows
  return { result, plan: rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n') }
}
