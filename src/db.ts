import crypto from 'node:crypto'
import path from 'node:path'
import fs from 'node:fs'
import os from 'node:os'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import knex from 'knex'
import type { Knex } from 'knex'
import type { PGlite } from '@electric-sql/pglite'
import { LRUCache } from 'lru-cache'
import pg from 'pg'
import type { Application } from './declarations.js'
import { isConnectionLoss } from './db-connections.js'
import { MEMORY_DATABASE, checkDatabaseUrl, isMemoryDatabase, lockDataDir } from './startup.js'
import { distributeSchema } from '../migrations/lib/citus.js'

const DATE_OID = 1082
const INT8_OID = 20

// Calendar dates stay 'YYYY-MM-DD' strings (never shifted through a local-time Date);
// counts (bigint) come back as numbers. numeric stays a string so money is never a float.
pg.types.setTypeParser(DATE_OID, (value: string) => value)
pg.types.setTypeParser(INT8_OID, (value: string) => Number(value))

export { MEMORY_DATABASE, isMemoryDatabase }

export const describeDatabase = (databaseUrl: string, dataDir: string) =>
  !databaseUrl
    ? `embedded Postgres in ${path.resolve(dataDir, 'pgdata')}`
    : isMemoryDatabase(databaseUrl)
      ? 'embedded Postgres in memory'
      : 'PostgreSQL server'

/** Tells the person starting the service what a slow step is doing (a line of the log). */
export type Narrate = (line: string) => void

async function embeddedConfig(databaseUrl: string, dataDir: string, narrate: Narrate): Promise<{ config: Knex.Config; templateToSave?: Template }> {
  const [{ PGlite }, { pg_trgm }, { btree_gist }, { btree_gin }, { unaccent }, { default: ClientPgLite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@electric-sql/pglite/contrib/btree_gist'),
    import('@electric-sql/pglite/contrib/btree_gin'),
    import('@electric-sql/pglite/contrib/unaccent'),
    import('knex-pglite')
  ])
  let dir = MEMORY_DATABASE
  let dump = isMemoryDatabase(databaseUrl) ? databaseUrl.slice(MEMORY_DATABASE.length) : ''
  // The embedded database on disk belongs to one process: DATA_DIR stays locked until it closes.
  let release = () => {}
  let templateToSave: Template | undefined
  if (!isMemoryDatabase(databaseUrl)) {
    release = lockDataDir(dataDir)
    dir = path.resolve(dataDir, 'pgdata')
    fs.mkdirSync(dir, { recursive: true })
    // A fresh data directory starts as a copy of the migrated template; without one, it is
    // created here, and saved as the template once migrated (createKnex).
    if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
      const template = ownTemplate()
      if (fs.existsSync(template.file)) dump = template.file
      else if (canWrite(TEMPLATE_DIRECTORY)) templateToSave = template
      narrate(dump
        ? `Creating the embedded database in ${dir} from the migrated template: a few seconds`
        : `Creating the embedded database in ${dir} and migrating it: about 15 seconds, once per set of migrations (later fresh data directories start from a copy)`)
    }
  }
  const pglite = new PGlite({
    dataDir: dir,
    ...(dump ? { loadDataDir: new Blob([fs.readFileSync(dump)]) } : {}),
    extensions: { pg_trgm, btree_gist, btree_gin, unaccent },
    parsers: { [DATE_OID]: (value: string) => value, [INT8_OID]: (value: string) => Number(value) }
  })
  // Creating the database files (or loading a dump) takes seconds on a busy machine: done before
  // knex's pool asks for its first connection, which it would give up on after its timeout.
  await pglite.waitReady
  const close = pglite.close.bind(pglite)
  pglite.close = async () => {
    try {
      await close()
    } finally {
      release()
    }
  }
  const config = {
    client: ClientPgLite as unknown as typeof Knex.Client,
    dialect: 'postgres',
    connection: () => ({ pglite }) as any
  } as Knex.Config
  return { config, templateToSave }
}

// knex warns of every failed connection attempt with its stack, and of every connection it
// discards because the server dropped it; the error itself still reaches the caller (start-up
// prints it as one line, a request answers 503), so the warning is noise.
const warnUnlessConnectionError = (message: string) => {
  if (!/^(Acquire connection error|Connection Error)/.test(String(message))) console.warn(message)
}

/** Knex on a Postgres server when databaseUrl is set, on embedded PGlite otherwise. */
export async function createKnex(
  databaseUrl: string,
  dataDir: string,
  poolSize = 10,
  narrate: Narrate = () => {},
  { citusMultiShardLevel = 'off' }: { citusMultiShardLevel?: string } = {}
): Promise<Knex> {
  if (databaseUrl && !isMemoryDatabase(databaseUrl)) {
    checkDatabaseUrl(databaseUrl)
    return knex({
      client: 'pg',
      connection: databaseUrl,
      pool: { min: 0, max: poolSize, ...(citusMultiShardLevel !== 'off' ? { afterCreate: citusSession(citusMultiShardLevel) } : {}) },
      log: { warn: warnUnlessConnectionError }
    })
  }
  const { config, templateToSave } = await embeddedConfig(databaseUrl, dataDir, narrate)
  const db = knex(config)
  if (templateToSave) await saveAsTemplate(db, templateToSave).catch(async (error) => {
    await db.destroy()
    throw error
  })
  return db
}

/**
 * Sets what a Citus coordinator does with a statement of this pool that touches more than one
 * shard (citus.multi_task_query_log_level), once per connection; nothing on a server without Citus.
 */
const citusSession = (level: string) => (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void) => {
  connection.query(
    `SELECT set_config('citus.multi_task_query_log_level', $1, false) FROM pg_extension WHERE extname = 'citus'`,
    [level],
    (error) => done(error, connection)
  )
}

export const isEmbedded = (db: Knex) => db.client.config.client !== 'pg'

/**
 * Runs independent reads in parallel on a pool, one after the other inside a transaction (one
 * connection cannot run two statements at once: pg queues the second, and pg@9 will refuse it).
 */
export async function readAll<T extends readonly unknown[]>(db: Knex, reads: { [K in keyof T]: () => PromiseLike<T[K]> }): Promise<T> {
  if (!db.isTransaction) return Promise.all(reads.map((read) => read())) as unknown as Promise<T>
  const results: unknown[] = []
  for (const read of reads) results.push(await read())
  return results as unknown as T
}

/**
 * The database a call reads and writes through: its transaction when it runs in one (the
 * factory's write transaction, or a caller's), else the pool. A write opens its own transaction
 * on this, so that it nests as a savepoint.
 */
export const databaseOf = (params: { transaction?: { trx?: Knex.Transaction } } | undefined, pool: Knex): Knex =>
  params?.transaction?.trx ?? pool

/**
 * Names of prepared statements, by their text. A name is the text's hash, the same on every
 * connection, so a name forgotten here is only computed again.
 */
const statementNames = new LRUCache<string, string>({ max: 2000 })

const statementName = (text: string) => {
  let name = statementNames.get(text)
  if (!name) {
    name = `crm_${crypto.createHash('sha1').update(text).digest('hex').slice(0, 20)}`
    statementNames.set(text, name)
  }
  return name
}

/**
 * The rows of a statement whose text depends only on its shape (values are bound): on a Postgres
 * server, outside a transaction, it runs as a named statement, which each connection parses once
 * and Postgres may plan once; in a transaction or on the embedded database, as knex runs it. A
 * connection the statement found broken is discarded by knex's pool, not handed out again.
 */
export async function preparedRows<T>(db: Knex, { raw, native }: { raw: Knex.Raw | Knex.QueryBuilder; native?: { sql: string; bindings: readonly unknown[] } }): Promise<T[]> {
  if (db.isTransaction || isEmbedded(db)) {
    // A raw statement resolves to pg's result, a query builder to its rows.
    const result: any = await raw
    return Array.isArray(result) ? result : result.rows
  }
  const { sql, bindings } = native ?? raw.toSQL().toNative()
  const client = db.client as any
  const connection = await client.acquireConnection()
  try {
    client.emit('query', { method: 'raw', sql, bindings, __knexUid: connection.__knexUid })
    return (await connection.query({ name: statementName(sql), text: sql, values: bindings })).rows
  } catch (error) {
    if (isConnectionLoss(error)) connection.__knex__disposed = error
    throw error
  } finally {
    await client.releaseConnection(connection)
  }
}

/**
 * Lists the migrations and imports them from here: migrations/*.ts under tsx and vitest, their
 * compiled dist/migrations/*.js under `npm start`. Either way a migration is recorded under its
 * source name (<name>.ts), so a database migrated by one is current for the other: knex refuses
 * a database whose recorded migrations it cannot find.
 */
class DirectoryMigrationSource implements Knex.MigrationSource<string> {
  constructor(
    readonly directory: string,
    private extension: '.ts' | '.js'
  ) {}

  /** A hash of what the migrations would do: the names and contents of their files (lib/ too), and salt. */
  fingerprint(salt: string) {
    const hash = crypto.createHash('sha256').update(salt)
    const files = fs.readdirSync(this.directory, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith(this.extension))
    for (const file of files.sort()) hash.update(`\0${file}\0`).update(fs.readFileSync(path.join(this.directory, file)))
    return hash.digest('hex').slice(0, 16)
  }

  async getMigrations() {
    const files = await fs.promises.readdir(this.directory)
    return files.filter((file) => /^\d+_/.test(file) && file.endsWith(this.extension)).sort()
  }

  getMigrationName(migration: string) {
    return migration.slice(0, -this.extension.length) + '.ts'
  }

  async getMigration(migration: string) {
    return import(pathToFileURL(path.join(this.directory, migration)).href)
  }
}

// Compiled, this module is dist/src/db.js and its migrations are dist/migrations/*.js.
const ownMigrations = () =>
  import.meta.url.endsWith('.js')
    ? new DirectoryMigrationSource(fileURLToPath(new URL('../migrations', import.meta.url)), '.js')
    : new DirectoryMigrationSource(path.resolve('migrations'), '.ts')

const MIGRATION_LOCK_RETRY_MS = 250
const MIGRATION_LOCK_TIMEOUT_MS = 120_000

/**
 * Applies pending migrations: the service's own, or the migrations/*.ts of sourceDirectory (the
 * benchmark migrates for another checkout). Several instances may start at once: knex lets one
 * hold the migration lock and fails the others, which wait and retry until the schema is current.
 */
export async function migrate(db: Knex, sourceDirectory?: string) {
  const migrationSource = sourceDirectory ? new DirectoryMigrationSource(sourceDirectory, '.ts') : ownMigrations()
  const config: Knex.MigratorConfig = { migrationSource }
  const started = Date.now()
  for (;;) {
    try {
      const result = await db.migrate.latest(config)
      // A database restored into a Citus coordinator has run its migrations already: what the
      // distribution migration does is checked after every run (nothing to do once done, or off Citus).
      await db.transaction((trx) => distributeSchema(trx))
      return result
    } catch (error: any) {
      const locked = error?.name === 'MigrationLocked' || /already locked/i.test(error?.message ?? '')
      const racedOnSetup = error?.code === '23505' || error?.code === '42P07'
      if (!(locked || racedOnSetup) || Date.now() - started > MIGRATION_LOCK_TIMEOUT_MS) throw error
      await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_RETRY_MS))
    }
  }
}

// The service's root directory: this module is src/db.ts, compiled dist/src/db.js.
const projectRoot = fileURLToPath(new URL(import.meta.url.endsWith('.js') ? '../..' : '..', import.meta.url))
const TEMPLATE_DIRECTORY = path.join(projectRoot, 'node_modules', '.cache', 'crm-api')

const pgliteVersion = () => {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite')
  return JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')).version as string
}

const canWrite = (directory: string) => {
  try {
    fs.mkdirSync(directory, { recursive: true })
    fs.accessSync(directory, fs.constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** Writes through a rename: a process that reads the file finds it whole or not at all. */
function writeWhole(file: string, contents: Buffer) {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`)
  fs.writeFileSync(temporary, contents)
  fs.renameSync(temporary, file)
}

/** The PGlite instance under an embedded database's knex. */
const pgliteOf = (db: Knex) => (db.client.config.connection as () => { pglite: PGlite })().pglite

interface Template {
  /** Where its dump is kept. */
  file: string
  /** How the names of the templates of the same migrations directory start. */
  prefix: string
}

/**
 * The template a fresh embedded data directory starts from, instead of running initdb and every
 * migration: the dump (PGlite's dumpDataDir) of an empty database migrated by the service's own
 * migrations, kept in node_modules/.cache/crm-api/. Its name hashes the PGlite version and every
 * migration file, so a template of another migration set is never loaded (the migrator still runs
 * on every copy); it starts with a hash of the migrations directory, whose earlier templates alone
 * a new one replaces (never those of another checkout sharing node_modules).
 */
function ownTemplate(): Template {
  const source = ownMigrations()
  const prefix = `migrated-${crypto.createHash('sha256').update(source.directory).digest('hex').slice(0, 8)}-`
  return { prefix, file: path.join(TEMPLATE_DIRECTORY, `${prefix}${source.fingerprint(pgliteVersion())}.tar`) }
}

/**
 * Migrates a database this process has just created, before anything else can write to it, and
 * saves its dump as the template: the first fresh data directory pays only for the dump.
 */
async function saveAsTemplate(db: Knex, { file, prefix }: Template) {
  await migrate(db)
  writeWhole(file, Buffer.from(await (await pgliteOf(db).dumpDataDir('none')).arrayBuffer()))
  for (const name of fs.readdirSync(TEMPLATE_DIRECTORY)) {
    if (name.startsWith(prefix) && name !== path.basename(file)) fs.rmSync(path.join(TEMPLATE_DIRECTORY, name), { force: true })
  }
}

/**
 * The template's file, made first if missing (by creating a scratch data directory); undefined
 * where it cannot be kept (a read-only installation, where fresh data directories are created
 * and migrated in place). The tests' in-memory databases start as copies of it.
 */
export async function migratedTemplate(): Promise<string | undefined> {
  const { file } = ownTemplate()
  if (!fs.existsSync(file) && canWrite(TEMPLATE_DIRECTORY)) {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'crm-template-'))
    try {
      await (await createKnex('', scratch)).destroy()
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true })
    }
  }
  return fs.existsSync(file) ? file : undefined
}

/** Connections of the background work's own pool on a Postgres server. */
const BACKGROUND_POOL_SIZE = 2

/**
 * Knex for the application's background work (the outbox worker's claims, leases and
 * bookkeeping, the periodic sweeps), on the database of db: on a Postgres server a small pool of
 * its own, so that background passes and requests never wait for each other's connections and
 * what db runs is the requests' work alone. Embedded Postgres is one session: the background
 * client is a second knex on the same PGlite instance that takes db's one connection in turn
 * (two clients sending statements to one session would run one's inside the other's transaction).
 */
export function createBackgroundKnex(db: Knex): Knex {
  const { client, connection } = db.client.config
  if (!isEmbedded(db)) return knex({ client, connection, pool: { min: 0, max: BACKGROUND_POOL_SIZE }, log: { warn: warnUnlessConnectionError } })
  const appClient = db.client
  // Its own pool never opens a connection, so destroying it leaves the database to db's teardown.
  class SharedConnectionClient extends (client as typeof Knex.Client) {
    acquireConnection() {
      return appClient.acquireConnection()
    }

    releaseConnection(held: unknown) {
      return appClient.releaseConnection(held)
    }
  }
  return knex({ client: SharedConnectionClient, dialect: 'postgres', connection } as Knex.Config)
}

/** app.get('knex') for the requests, app.get('backgroundKnex') for the background work (createBackgroundKnex). */
export const database = async (app: Application) => {
  const logger = app.get('logger')
  const db = await createKnex(app.get('databaseUrl'), app.get('dataDir'), app.get('databasePoolSize'), (line) => logger.info(line), {
    citusMultiShardLevel: app.get('citusMultiShardLevel')
  })
  app.set('knex', db)
  app.set('backgroundKnex', createBackgroundKnex(db))
}
