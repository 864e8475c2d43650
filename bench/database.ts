import path from 'node:path'
import type { Knex } from 'knex'
import { createKnex, migrate } from '../src/db.js'
import { seed } from './seed.js'
import { isDistributed } from '../migrations/lib/citus.js'
import { PLAIN_CONTACTS } from './bare-sql.js'
import { CREATED_EMAIL_PREFIX } from './streams.js'

export interface DatabaseOptions {
  scale: number
  reseed: boolean
  /** The checkout whose migrations build the schema. */
  serviceDir: string
  log: (message: string) => void
}

/**
 * Creates and seeds the benchmark database, or reuses it when it was seeded at this scale; then
 * removes what earlier runs created, makes the plain copy of contacts and vacuums.
 */
export async function prepareDatabase(adminUrl: string, name: string, options: DatabaseOptions): Promise<string> {
  const { scale, log } = options
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`BENCH_DATABASE must be a plain identifier, got '${name}'`)
  const benchUrl = new URL(adminUrl)
  benchUrl.pathname = `/${name}`
  const admin = await createKnex(adminUrl, './data', 1)
  try {
    const exists = (await admin.raw('SELECT 1 FROM pg_database WHERE datname = ?', [name])).rows.length > 0
    let reusable = false
    let citus: CitusState | undefined
    if (exists) {
      const probe = await createKnex(benchUrl.toString(), './data', 1)
      try {
        if (!options.reseed) {
          const marker = await probe.raw('SELECT summary FROM bench_seed WHERE scale = ?', [scale]).catch(() => ({ rows: [] }))
          reusable = marker.rows.length > 0
        }
        citus = await citusState(probe)
      } finally {
        await probe.destroy()
      }
    }
    if (!exists && (await admin.raw(`SELECT current_setting('shared_preload_libraries') ~ 'citus' AS citus`)).rows[0].citus) {
      // CREATE DATABASE on a coordinator makes a plain database on it alone: the run would
      // measure single-node Postgres while looking like Citus.
      throw new Error(`${name} does not exist on this Citus coordinator: create it with scripts/citus.sh createdb ${name} (the extension and the workers in it)`)
    }
    if (citus && !reusable) {
      // A distributed database is made on every node by scripts/citus.sh; dropping it here would
      // leave a plain one. Seed it only while it is as createdb left it.
      if (citus.migrated) {
        throw new Error(`${name} is a Citus database used already (seeded at another scale, a seed cut short, or --reseed): recreate it with scripts/citus.sh dropdb ${name} && scripts/citus.sh createdb ${name}`)
      }
      log(`Using the Citus database ${name} as scripts/citus.sh created it`)
    } else if (!reusable) {
      log(`Creating database ${name}`)
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.raw(`CREATE DATABASE ${name}`)
    } else {
      log(`Reusing database ${name} seeded at scale ${scale} (--reseed to start over)`)
    }
  } finally {
    await admin.destroy()
  }

  const db = await createKnex(benchUrl.toString(), './data', 2)
  try {
    const [, applied] = await migrate(db, path.join(options.serviceDir, 'migrations'))
    if (applied.length) log(`Migrated: ${applied.join(', ')}`)
    const seeded = (await db.raw(`SELECT to_regclass('bench_seed') IS NOT NULL AS present`)).rows[0].present
    if (!seeded) {
      log(`Seeding at scale ${scale}`)
      const summary = await seed(db, scale, log)
      log(`Seeded in ${summary.seconds} s`)
      await db.raw('CREATE TABLE bench_seed (scale numeric PRIMARY KEY, summary jsonb NOT NULL)')
      await db.raw('INSERT INTO bench_seed VALUES (?, ?)', [scale, JSON.stringify(summary)])
    }
    await removeCreatedContacts(db, log)
    await preparePlainCopy(db, log)
    // Every run starts from the state autovacuum keeps a database in: the dead rows of earlier
    // runs' writes removed, the visibility map set for index-only scans, the statistics current.
    // Without it, on a server where autovacuum is off (this project's CI machine), each run is
    // slower than the one before it.
    const started = Date.now()
    // On a coordinator a VACUUM without tables stays on the coordinator: the distributed tables
    // are named, so that it runs on their shards on the workers too.
    const distributed = (await citusState(db))
      ? (await db.raw(`SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition ORDER BY 1`)).rows.map((row: { name: string }) => row.name)
      : []
    await db.raw('VACUUM (ANALYZE)')
    if (distributed.length) await db.raw(`VACUUM (ANALYZE) ${distributed.join(', ')}`)
    log(`Vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } finally {
    await db.destroy()
  }
  return benchUrl.toString()
}

interface CitusState {
  /** Whether the service's migrations ran in it. */
  migrated: boolean
}

/** Whether a database has the citus extension (a coordinator's database), and whether it was migrated. */
async function citusState(db: Knex): Promise<CitusState | undefined> {
  const { rows } = await db.raw(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus, to_regclass('knex_migrations') IS NOT NULL AS migrated`)
  return rows[0].citus ? { migrated: rows[0].migrated } : undefined
}

/** The contacts earlier runs created (their e-mail says so), from both tables: every run starts from the seeded rows. */
async function removeCreatedContacts(db: Knex, log: (message: string) => void) {
  const pattern = `${CREATED_EMAIL_PREFIX}%`
  let removed = 0
  for (const table of ['contacts', PLAIN_CONTACTS]) {
    if (!(await db.raw('SELECT to_regclass(?) IS NOT NULL AS present', [table])).rows[0].present) continue
    removed += (await db.raw(`DELETE FROM ${table} WHERE email LIKE ?`, [pattern])).rowCount ?? 0
  }
  if (removed) log(`Removed ${removed} contacts created by earlier runs`)
}

/** contacts' columns that take a value (a generated column is computed from the others). */
export async function writableColumns(db: Knex, table: string): Promise<string[]> {
  const { rows } = await db.raw(
    `SELECT attname FROM pg_attribute WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
    [table]
  )
  return rows.map((row: { attname: string }) => row.attname)
}

/** A table's columns and index definitions (named after the table), to tell whether the copy still matches. */
async function shapeOf(db: Knex, table: string): Promise<string> {
  const columns = (await db.raw(
    `SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || ' ' || attgenerated::text, ', ' ORDER BY attnum) AS shape
     FROM pg_attribute WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped`, [table]
  )).rows[0].shape
  const indexes = (await db.raw(
    // Without the 'CREATE INDEX name ON table' part, which differs between the two.
    `SELECT string_agg(definition, '; ' ORDER BY definition) AS shape
     FROM (SELECT regexp_replace(indexdef, '^.* USING ', '') AS definition FROM pg_indexes WHERE schemaname = 'public' AND tablename = ?) i`, [table]
  )).rows[0].shape
  return `${columns} | ${indexes}`
}

/**
 * The plain copy of contacts the bare server writes into: `LIKE contacts INCLUDING ALL` (the
 * same columns, defaults, generated column and indexes; no triggers, and so no foreign keys
 * either) holding the same rows, so that its indexes are as large as the real table's. Made
 * again when contacts' columns or indexes changed (a new migration).
 */
async function preparePlainCopy(db: Knex, log: (message: string) => void) {
  const exists = (await db.raw('SELECT to_regclass(?) IS NOT NULL AS present', [PLAIN_CONTACTS])).rows[0].present
  if (exists && (await shapeOf(db, 'contacts')) === (await shapeOf(db, PLAIN_CONTACTS))) return
  const started = Date.now()
  await db.raw(`DROP TABLE IF EXISTS ${PLAIN_CONTACTS}`)
  await db.raw(`CREATE TABLE ${PLAIN_CONTACTS} (LIKE contacts INCLUDING ALL)`)
  // On a coordinator, held as contacts is (each organization's rows on the node of its contacts):
  // the bare server's writes then cost what a write into contacts costs there, triggers aside.
  if (await isDistributed(db)) await db.raw(`SELECT create_distributed_table(?, 'organization_id', colocate_with => 'contacts')`, [PLAIN_CONTACTS])
  const columns = (await writableColumns(db, 'contacts')).join(', ')
  await db.raw(`INSERT INTO ${PLAIN_CONTACTS} (${columns}) SELECT ${columns} FROM contacts`)
  log(`Made ${PLAIN_CONTACTS}, the plain copy of contacts, in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

/** Puts one contact's row of the plain copy back to what contacts holds (the check compares writes on equal rows). */
export async function copyContactToPlain(db: Knex, organizationId: number, id: number) {
  const columns = (await writableColumns(db, 'contacts')).join(', ')
  await db.transaction(async (trx) => {
    await trx.raw(`DELETE FROM ${PLAIN_CONTACTS} WHERE organization_id = ? AND id = ?`, [organizationId, id])
    await trx.raw(`INSERT INTO ${PLAIN_CONTACTS} (${columns}) SELECT ${columns} FROM contacts WHERE organization_id = ? AND id = ?`, [organizationId, id])
  })
}
