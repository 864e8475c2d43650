import path from 'node:path'
import type { Knex } from 'knex'
import { createKnex, migrate } from '../src/db.js'
import { seed } from './seed.js'
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
    if (exists && !options.reseed) {
      const probe = await createKnex(benchUrl.toString(), './data', 1)
      try {
        const marker = await probe.raw('SELECT summary FROM bench_seed WHERE scale = ?', [scale]).catch(() => ({ rows: [] }))
        reusable = marker.rows.length > 0
      } finally {
        await probe.destroy()
      }
    }
    if (!reusable) {
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
    await db.raw('VACUUM (ANALYZE)')
    log(`Vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } finally {
    await db.destroy()
  }
  return benchUrl.toString()
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
