import type { Knex } from 'knex'
import { cpuTimeMs, databaseCpuSpentMs, onThisMachine } from './processes.js'

const SAMPLE_MS = 200
/** What a sample may show of CPU and still be quiet: one clock tick. */
const QUIET_CPU_MS = 10

/**
 * The milliseconds from `since` until the benchmark database stopped working for good: none of its
 * backends (the service's connections, a parallel or autovacuum worker in it) active and, on a
 * server on this machine, none of them spending CPU, for `quietMs` on end. Undefined when it was
 * still working `maxMs` after `since`. The server's own background processes (checkpointer,
 * WAL writer) serve every database on it and are left out, and so is the connection that asks.
 */
export async function idleAfter(db: Knex, databaseUrl: string, options: { since: number; quietMs: number; maxMs: number }): Promise<number | undefined> {
  const readsCpu = onThisMachine(databaseUrl)
  let previous = await backends(db, readsCpu)
  let quietSince: number | undefined
  while (Date.now() - options.since < options.maxMs) {
    const sampledAt = Date.now()
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS))
    const current = await backends(db, readsCpu)
    const quiet = current.working === 0 && databaseCpuSpentMs(previous.cpu, current.cpu) <= QUIET_CPU_MS
    previous = current
    if (!quiet) {
      quietSince = undefined
      continue
    }
    quietSince ??= sampledAt
    if (Date.now() - quietSince >= options.quietMs) return Math.max(0, quietSince - options.since)
  }
  return undefined
}

/** The database's other backends: how many are working now, and the CPU each has used so far (none read off this machine). */
async function backends(db: Knex, readsCpu: boolean): Promise<{ working: number; cpu: Map<number, number> }> {
  const { rows } = await db.raw(`
    SELECT pid, state = 'active' OR backend_type = 'autovacuum worker' AS working
    FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
  return {
    working: rows.filter((row: { working: boolean }) => row.working).length,
    cpu: new Map(readsCpu ? rows.map((row: { pid: number }) => [row.pid, cpuTimeMs(row.pid)]) : [])
  }
}
