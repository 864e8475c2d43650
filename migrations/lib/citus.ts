import type { Knex } from 'knex'

/**
 * Distribution of the schema on Citus (Postgres distributed by tenant). On plain Postgres and
 * PGlite every function here is a no-op, so the same migrations serve both.
 *
 * - Tenant tables (an organization_id, leading their primary key) are distributed by
 *   organization_id and co-located with TENANT_ANCHOR: every shard of every tenant table holding
 *   one organization sits on the same node, so a request's joins, foreign keys and triggers stay
 *   on one shard.
 * - SHARED_TABLES are reference tables (one copy on every node): what a request reads before it
 *   knows its organization (users, sign-in, a user's organizations, API keys, invitation, booking
 *   and channel lookups by token or provider id), read as one single-shard statement, written rarely.
 * - COORDINATOR_TABLES stay on the coordinator alone (Citus local tables): the outbox and the
 *   idempotency records are queues and keys across organizations, claimed with SKIP LOCKED, which
 *   a single Postgres does best.
 */
export const TENANT_ANCHOR = 'contacts'

export const SHARED_TABLES = [
  'users',
  'organizations',
  'email_verifications',
  'password_resets',
  'organizations_users',
  'api_keys',
  'organizations_users_invites',
  'channel_accounts',
  'reservation_booking_links'
]

export const COORDINATOR_TABLES = ['outbox_jobs', 'idempotency_keys']

/**
 * LOOKUP_TABLES are distributed by their own key: a public token's organization, found by the
 * token's hash alone (one single-shard read), written once per web-chat session or booking.
 */
export const LOOKUP_TABLES: Record<string, string> = { public_tokens: 'token_hash' }

/** Tables the migrator keeps for itself: never distributed. */
const MIGRATOR_TABLES = ['knex_migrations', 'knex_migrations_lock']

/** Whether the database has the citus extension (plain Postgres and PGlite do not). */
export async function isCitus(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw(`SELECT 1 FROM pg_extension WHERE extname = 'citus'`)
  return rows.length > 0
}

/** How Citus holds a table: distributed ('hash'), 'reference', 'local' (the coordinator's) or undefined (plain). */
export async function citusTableType(knex: Knex, table: string): Promise<'hash' | 'reference' | 'local' | undefined> {
  const { rows } = await knex.raw(
    `SELECT CASE WHEN partmethod = 'h' THEN 'hash' WHEN repmodel = 't' THEN 'reference' ELSE 'local' END AS type
       FROM pg_dist_partition WHERE logicalrelid = to_regclass(?)`,
    [table]
  )
  return rows[0]?.type
}

interface ForeignKey {
  table: string
  name: string
  definition: string
}

/** The foreign keys from or to `tables`, as statements that recreate them. */
async function foreignKeysOf(knex: Knex, tables: string[]): Promise<ForeignKey[]> {
  const { rows } = await knex.raw(
    `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
       FROM pg_constraint
      WHERE contype = 'f' AND (conrelid::regclass::text = ANY(?) OR confrelid::regclass::text = ANY(?))
      ORDER BY conrelid::regclass::text, conname`,
    [tables, tables]
  )
  return rows
}

/**
 * Unique indexes of `table` without organization_id, which a distributed table cannot enforce
 * (each shard checks its own rows): recreated with organization_id leading. Those of the tenant
 * tables are of random tokens, unique by construction; a lookup by one alone is a query of
 * every shard, so it goes through a reference table or carries its organization.
 */
async function uniqueIndexesWithoutTenant(knex: Knex, table: string): Promise<{ name: string; definition: string; constraint: boolean }[]> {
  const { rows } = await knex.raw(
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition,
            EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) AS constraint
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = to_regclass(?) AND i.indisunique
        AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attname = 'organization_id' AND a.attnum = ANY(i.indkey))`,
    [table]
  )
  return rows
}

/** The row-level counter triggers of record_counts that work on shards (see distributeCounterTriggers). */
export const COUNTED_TABLES = ['companies', 'contacts', 'deals', 'activities']

/**
 * Statement-level triggers with transition tables do not run on distributed tables, and a
 * trigger on a shard sees the shard's name (contacts_102008) as TG_TABLE_NAME: on Citus the
 * record_counts family is row-level, named after its table by argument. Each row's delta goes
 * to the co-located shard of record_counts on the same node, in the writer's transaction.
 */
async function distributeCounterTriggers(knex: Knex, table: string) {
  for (const event of ['inserted', 'deleted', 'updated', 'truncated']) await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_${event} ON ${table}`)
  await knex.raw(`CREATE TRIGGER ${table}_count_inserted AFTER INSERT ON ${table}
    FOR EACH ROW WHEN (NEW.deleted_at IS NULL) EXECUTE FUNCTION record_counts_row_changed('${table}')`)
  await knex.raw(`CREATE TRIGGER ${table}_count_deleted AFTER DELETE ON ${table}
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION record_counts_row_changed('${table}')`)
  await knex.raw(`CREATE TRIGGER ${table}_count_updated AFTER UPDATE OF deleted_at, organization_id ON ${table}
    FOR EACH ROW WHEN ((OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL)
      OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
    EXECUTE FUNCTION record_counts_row_changed('${table}')`)
  await knex.raw(`CREATE TRIGGER ${table}_count_truncated AFTER TRUNCATE ON ${table}
    FOR EACH STATEMENT EXECUTE FUNCTION record_counts_row_changed('${table}')`)
}

async function createCounterFunction(knex: Knex) {
  const add = (organization: string, delta: string) => `
    INSERT INTO record_counts AS c (organization_id, table_name, slot, live)
    VALUES (${organization}, TG_ARGV[0], pg_backend_pid() % 16, ${delta})
    ON CONFLICT (organization_id, table_name, slot) DO UPDATE SET live = c.live + EXCLUDED.live`
  await knex.raw(`
    CREATE OR REPLACE FUNCTION record_counts_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM record_counts WHERE table_name = TG_ARGV[0];
        RETURN NULL;
      END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') AND OLD.deleted_at IS NULL THEN ${add('OLD.organization_id', '-1')}; END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN ${add('NEW.organization_id', '1')}; END IF;
      RETURN NULL;
    END $$`)
}

/** Tables of the public schema with an organization_id column, that are not shared or the coordinator's. */
async function tenantTables(knex: Knex): Promise<string[]> {
  const { rows } = await knex.raw(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped)
      ORDER BY c.relname`
  )
  const other = new Set([...SHARED_TABLES, ...COORDINATOR_TABLES, ...Object.keys(LOOKUP_TABLES), ...MIGRATOR_TABLES])
  return rows.map((row: { name: string }) => row.name).filter((name: string) => !other.has(name))
}

const existing = async (knex: Knex, tables: string[]) => {
  const { rows } = await knex.raw(`SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname = ANY(?)`, [tables])
  const found = new Set(rows.map((row: { name: string }) => row.name))
  return tables.filter((table) => found.has(table))
}

/**
 * Distributes the whole schema on Citus (no-op elsewhere): shared tables become reference tables,
 * the coordinator's stay local, every tenant table is distributed by organization_id, co-located.
 * Foreign keys between them are dropped first and recreated after (Citus accepts a key from a
 * distributed table only to a co-located one, on organization_id, or to a reference table), so
 * the order of the tables does not matter. An existing single-node database is converted the same
 * way: run the migrations on the coordinator it was restored into.
 */
export async function distributeSchema(knex: Knex) {
  if (!(await isCitus(knex))) return
  // Several processes starting at once (WEB_CONCURRENCY, machines) distribute one at a time.
  await knex.raw(`SELECT pg_advisory_xact_lock(hashtext('crm:distribute-schema'))`)
  const shared = await existing(knex, SHARED_TABLES)
  const coordinator = await existing(knex, COORDINATOR_TABLES)
  const tenant = await tenantTables(knex)
  const todo = {
    shared: [] as string[],
    coordinator: [] as string[],
    tenant: [] as string[]
  }
  for (const table of shared) if ((await citusTableType(knex, table)) !== 'reference') todo.shared.push(table)
  for (const table of coordinator) if ((await citusTableType(knex, table)) !== 'local') todo.coordinator.push(table)
  for (const table of tenant) if ((await citusTableType(knex, table)) !== 'hash') todo.tenant.push(table)
  const moving = [...todo.shared, ...todo.coordinator, ...todo.tenant]
  if (moving.length === 0) return distributeLookupTables(knex)
  // One connection per node for the whole transaction: creating shards over several connections
  // and then adding keys between them would need each shard's writes on the connection that made it.
  await knex.raw(`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`)

  const keys = await foreignKeysOf(knex, moving)
  for (const key of keys) await knex.raw(`ALTER TABLE ${key.table} DROP CONSTRAINT ${key.name}`)
  // Tables Citus converted to local ones on its own (referencing a reference table) go back to plain.
  for (const table of moving) {
    if ((await citusTableType(knex, table)) === 'local') await knex.raw('SELECT undistribute_table(?)', [table])
  }
  for (const table of todo.tenant) {
    for (const index of await uniqueIndexesWithoutTenant(knex, table)) {
      if (index.constraint) await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${index.name}`)
      else await knex.raw(`DROP INDEX ${index.name}`)
      await knex.raw(index.definition.replace(/\(/, '(organization_id, '))
    }
  }
  const counted = todo.tenant.filter((table) => COUNTED_TABLES.includes(table))
  if (counted.length > 0) {
    for (const table of counted) for (const event of ['inserted', 'deleted', 'updated', 'truncated']) await knex.raw(`DROP TRIGGER IF EXISTS ${table}_count_${event} ON ${table}`)
  }

  for (const table of todo.shared) await knex.raw('SELECT create_reference_table(?)', [table])
  for (const table of todo.coordinator) await knex.raw('SELECT citus_add_local_table_to_metadata(?)', [table])
  const anchorType = await citusTableType(knex, TENANT_ANCHOR)
  const ordered = anchorType === 'hash' ? todo.tenant : [TENANT_ANCHOR, ...todo.tenant.filter((table) => table !== TENANT_ANCHOR)]
  for (const table of ordered) {
    const colocateWith = table === TENANT_ANCHOR ? 'none' : TENANT_ANCHOR
    await knex.raw(`SELECT create_distributed_table(?, 'organization_id', colocate_with => ?)`, [table, colocateWith])
  }
  for (const key of keys) await knex.raw(`ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition}`)

  if (counted.length > 0) {
    await createCounterFunction(knex)
    await knex.raw('SET LOCAL citus.enable_unsafe_triggers = on')
    for (const table of counted) await distributeCounterTriggers(knex, table)
  }
  await distributeLookupTables(knex)
}

async function distributeLookupTables(knex: Knex) {
  for (const table of await existing(knex, Object.keys(LOOKUP_TABLES))) await distributeLookupTable(knex, table, LOOKUP_TABLES[table])
}

/** Whether the schema is distributed already (Citus, after the distribution migration). */
export async function isDistributed(knex: Knex): Promise<boolean> {
  return (await isCitus(knex)) && (await citusTableType(knex, TENANT_ANCHOR)) === 'hash'
}

/**
 * Distributes one tenant table a later migration creates (tenantTable does it for the tables it
 * creates), co-located with the others, or makes a
 * shared one a reference table (no-op off Citus, or while the schema is not distributed yet:
 * distributeSchema takes it with the rest). Its foreign keys to other tenant tables must
 * include organization_id, as tenantReference's do.
 */
export async function distributeTenantTable(knex: Knex, table: string) {
  if (!(await isDistributed(knex))) return
  await distributeSchemaTables(knex, table, 'hash')
}

/** Distributes a lookup table by its own key, apart from the tenant tables (no-op off Citus or before the schema is distributed). */
export async function distributeLookupTable(knex: Knex, table: string, key: string) {
  if (!(await isDistributed(knex)) || (await citusTableType(knex, table)) === 'hash') return
  const keys = await foreignKeysOf(knex, [table])
  for (const foreign of keys) await knex.raw(`ALTER TABLE ${foreign.table} DROP CONSTRAINT ${foreign.name}`)
  await knex.raw(`SELECT create_distributed_table(?, ?, colocate_with => 'none')`, [table, key])
  for (const foreign of keys) await knex.raw(`ALTER TABLE ${foreign.table} ADD CONSTRAINT ${foreign.name} ${foreign.definition}`)
}

/** Makes a shared table a reference table (no-op off Citus or before the schema is distributed). */
export async function referenceTable(knex: Knex, table: string) {
  if (!(await isDistributed(knex))) return
  await distributeSchemaTables(knex, table, 'reference')
}

async function distributeSchemaTables(knex: Knex, table: string, type: 'hash' | 'reference') {
  if ((await citusTableType(knex, table)) === type) return
  const keys = (await foreignKeysOf(knex, [table]))
  for (const key of keys) await knex.raw(`ALTER TABLE ${key.table} DROP CONSTRAINT ${key.name}`)
  if ((await citusTableType(knex, table)) === 'local') await knex.raw('SELECT undistribute_table(?)', [table])
  if (type === 'reference') await knex.raw('SELECT create_reference_table(?)', [table])
  else await knex.raw(`SELECT create_distributed_table(?, 'organization_id', colocate_with => ?)`, [table, TENANT_ANCHOR])
  for (const key of keys) await knex.raw(`ALTER TABLE ${key.table} ADD CONSTRAINT ${key.name} ${key.definition}`)
}
