import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Knex } from 'knex'
import { afterAll, describe, expect, it } from 'vitest'
import { createKnex, migrate, migratedTemplate } from '../../src/db.js'
import { leftovers, run } from '../helpers/process.js'

// A fresh embedded data directory starts as a copy of the migrated template, or becomes the
// template when there is none (src/db.ts): on a copy of the checkout here, so that the test can
// add a migration to it.
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const TEMPLATES = path.join(ROOT, 'node_modules', '.cache', 'crm-api')
const left = leftovers('crm-template-')

const MARKER_MIGRATION = `import type { Knex } from 'knex'
export const up = (knex: Knex) => knex.schema.createTable('template_marker', (table) => table.increments('id'))
export const down = (knex: Knex) => knex.schema.dropTable('template_marker')
`

function copyOfCheckout() {
  const dir = left.tempDir()
  for (const entry of ['package.json', 'tsconfig.json', 'config', 'src', 'migrations']) {
    fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true })
  }
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
  return dir
}

/** The templates made for a checkout's migrations: named by their directory, in the node_modules it shares. */
const templatesOf = (checkout: string) => {
  const prefix = `migrated-${crypto.createHash('sha256').update(path.join(checkout, 'migrations')).digest('hex').slice(0, 8)}-`
  return fs.readdirSync(TEMPLATES).filter((name) => name.startsWith(prefix))
}

/** `npm run migrate` in the checkout, on a fresh embedded data directory; that directory. */
async function migrateFreshDataDir(checkout: string) {
  const dataDir = left.tempDir()
  const env = { npm_config_update_notifier: 'false', LOG_LEVEL: 'warn', DATABASE_URL: '', DATA_DIR: dataDir, REDIS_URL: '' }
  const spawned = left.started(run('npm', ['--prefix', checkout, 'run', 'migrate'], env))
  expect(await spawned.exited, spawned.output().stderr).toBe(0)
  return dataDir
}

async function inDatabase<T>(dataDir: string, read: (db: Knex) => Promise<T>): Promise<T> {
  const db = await createKnex('', dataDir)
  try {
    return await read(db)
  } finally {
    await db.destroy()
  }
}
const recordedMigrations = (db: Knex) => db('knex_migrations').orderBy('id').select('name', 'batch', 'migration_time')
const names = (rows: { name: string }[]) => rows.map((row) => row.name)
const hasMarker = (db: Knex) => db.schema.hasTable('template_marker')

let checkout = ''
afterAll(async () => {
  if (checkout) for (const name of templatesOf(checkout)) fs.rmSync(path.join(TEMPLATES, name), { force: true })
  await left.clear()
})

describe('the migrated template of the embedded database', () => {
  it('when two fresh data directories are opened, then both are copies of one migrated database: every migration recorded at the same instants', async () => {
    expect(await migratedTemplate()).toBeDefined()
    const [first, second] = await Promise.all([left.tempDir(), left.tempDir()].map((dataDir) => inDatabase(dataDir, recordedMigrations)))
    expect(names(first)).toEqual(fs.readdirSync(path.join(ROOT, 'migrations')).filter((file) => /^\d+_.+\.ts$/.test(file)).sort())
    expect(second).toEqual(first)
  }, 60_000)

  it('when a migration is added, then a fresh data directory is migrated in one batch and saved as the new template (the older one is never loaded, and is removed), and a directory made before is migrated on top', async () => {
    checkout = copyOfCheckout()
    const before = await migrateFreshDataDir(checkout)
    const sources = fs.readdirSync(path.join(checkout, 'migrations')).filter((file) => /^\d+_.+\.ts$/.test(file)).sort()
    expect(names(await inDatabase(before, recordedMigrations))).toEqual(sources)
    const [older] = templatesOf(checkout)
    expect(older).toBeDefined()

    fs.writeFileSync(path.join(checkout, 'migrations', '29990101000000_template_marker.ts'), MARKER_MIGRATION)
    const after = await migrateFreshDataDir(checkout)
    const recorded = await inDatabase(after, recordedMigrations)
    expect(names(recorded)).toEqual([...sources, '29990101000000_template_marker.ts'])
    // One batch: the older template with the new migration run on top would record two.
    expect(new Set(recorded.map((row) => row.batch))).toEqual(new Set([1]))
    expect(await inDatabase(after, hasMarker)).toBe(true)
    const current = templatesOf(checkout)
    expect(current).toHaveLength(1)
    expect(current[0]).not.toBe(older)

    expect(await inDatabase(before, hasMarker)).toBe(false)
    const [, applied] = await inDatabase(before, (db) => migrate(db, path.join(checkout, 'migrations')))
    expect(applied).toEqual(['29990101000000_template_marker.ts'])
    expect(await inDatabase(before, hasMarker)).toBe(true)
  }, 120_000)
})
