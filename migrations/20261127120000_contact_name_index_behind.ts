import type { Knex } from 'knex'
import { NAME_CHANGED, createNameGramTriggers, dropNameGramTriggers, gramsIn } from './20261123001500_contact_name_grams.js'
import * as renameLocks from './20261127110100_name_gram_rename_locks.js'

/**
 * The name-search index (contact_name_grams and its counts) kept behind the write instead of in
 * it: a contact's create, rename or delete wrote about forty gram rows and their counters in the
 * writer's transaction, most of the cost of a write. Now the write adds one row per contact to
 * contact_name_pending, and contact_name_index_drain() brings the grams up to date for a batch
 * of pending contacts at a time (src/services/crm/contacts/name-index.ts runs it).
 *
 * A pending row says "the grams of (organization, contact) may be stale" and records the version
 * the grams held when the change was made: its name if that version was live, nulls if it held
 * none. Writers of one contact are serialized by its row lock, so its rows' seq order is their
 * commit order and its first pending row's version is the one in the grams. The name search
 * (ContactService.nameGramPage) reads, in one snapshot, the grams of contacts that are not
 * pending plus the pending contacts' current names, and corrects the counted total by both:
 * exact and immediate whatever the drain's delay.
 *
 * The drain is one statement, so it sees one snapshot: it claims every visible row of the
 * contacts it takes, removes the grams of each one's first version and adds those of its current
 * row. It holds a transaction-level advisory lock taken before that statement's snapshot (a
 * plpgsql function takes a snapshot per statement), so a second drain never works from a
 * snapshot older than the first's commit. Rows a write adds after the snapshot stay pending,
 * and their recorded version is the one the drain indexed. Its joins are nested loops: every
 * entry it removes is found by its whole index key, whatever the statistics of a table that
 * was empty a moment ago say (a hash or merge join would read all of contact_name_grams); its
 * new entries go in in index order, so a batch touches each index page once. It returns how many
 * rows it took and how many are left (an upper bound from the sequence), which writers use to
 * wait when the index falls far behind.
 */
const PENDING = 'contact_name_pending'
// Two-key advisory lock: the first key is negative, so never an organization id or a worker's.
const DRAIN_LOCK = '-2, 1'

const pendingTriggers = {
  inserted: `INSERT INTO ${PENDING} (organization_id, contact_id)
    SELECT organization_id, id FROM inserted_rows WHERE deleted_at IS NULL`,
  deleted: `INSERT INTO ${PENDING} (organization_id, contact_id, indexed_first_name, indexed_last_name, indexed_search_name)
    SELECT organization_id, id, first_name, last_name, search_name FROM deleted_rows WHERE deleted_at IS NULL`,
  updated: `INSERT INTO ${PENDING} (organization_id, contact_id, indexed_first_name, indexed_last_name, indexed_search_name)
    SELECT OLD.organization_id, OLD.id, OLD.first_name, OLD.last_name, OLD.search_name WHERE OLD.deleted_at IS NULL
    UNION ALL SELECT OLD.organization_id, OLD.id, NULL, NULL, NULL WHERE OLD.deleted_at IS NOT NULL
    UNION ALL SELECT NEW.organization_id, NEW.id, NULL, NULL, NULL WHERE NEW.organization_id <> OLD.organization_id`,
  truncated: `TRUNCATE contact_name_grams, ${PENDING}`
}

/** Removes the stale entries whose last name is (or is not) null: two statements, so that each is a probe of the whole index key. */
const removeGrams = (lastName: 'named' | 'unnamed') => `
  DELETE FROM contact_name_grams AS k USING stale AS s
  WHERE k.organization_id = s.organization_id AND k.gram = s.gram AND k.first_name = s.first_name AND k.contact_id = s.contact_id
    AND ${lastName === 'named' ? 'k.last_name = s.last_name' : 's.last_name IS NULL AND k.last_name IS NULL'}`

const drainFunction = `
  CREATE FUNCTION contact_name_index_drain(most integer, OUT drained integer, OUT pending bigint) LANGUAGE plpgsql
  SET enable_hashjoin = off SET enable_mergejoin = off SET jit = off AS $$
  BEGIN
    drained := 0;
    IF pg_try_advisory_xact_lock(${DRAIN_LOCK}) THEN
    WITH chosen AS (
      SELECT DISTINCT organization_id, contact_id FROM (SELECT organization_id, contact_id FROM ${PENDING} ORDER BY seq LIMIT most) AS s
    ), claimed AS (
      DELETE FROM ${PENDING} AS p USING chosen AS c WHERE p.organization_id = c.organization_id AND p.contact_id = c.contact_id
      RETURNING p.seq, p.organization_id, p.contact_id, p.indexed_first_name, p.indexed_last_name, p.indexed_search_name
    ), indexed AS (
      SELECT DISTINCT ON (organization_id, contact_id) * FROM claimed ORDER BY organization_id, contact_id, seq
    ), stale AS MATERIALIZED (
      SELECT v.organization_id, g.gram, v.indexed_first_name AS first_name, v.indexed_last_name AS last_name, v.contact_id
      FROM indexed AS v CROSS JOIN LATERAL (${gramsIn('v.indexed_search_name')}) AS g
      WHERE v.indexed_search_name IS NOT NULL
    ), removed_named AS (${removeGrams('named')}
    ), removed_unnamed AS (${removeGrams('unnamed')}
    ), added AS (
      INSERT INTO contact_name_grams (organization_id, gram, first_name, last_name, contact_id)
      SELECT c.organization_id, g.gram, c.first_name, c.last_name, c.id
      FROM chosen AS ch JOIN contacts AS c ON c.organization_id = ch.organization_id AND c.id = ch.contact_id
      CROSS JOIN LATERAL (${gramsIn('c.search_name')}) AS g
      WHERE c.deleted_at IS NULL
      ORDER BY 1, 2, 3, 4, 5
    )
    SELECT count(*) INTO drained FROM claimed;
    END IF;
    SELECT coalesce(max(seq) - min(seq) + 1, 0) INTO pending FROM ${PENDING};
  END $$`

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ${PENDING} (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      organization_id integer NOT NULL,
      contact_id integer NOT NULL,
      indexed_first_name text,
      indexed_last_name text,
      indexed_search_name text
    )`)
  await knex.raw(`CREATE INDEX ${PENDING}_contact ON ${PENDING} (organization_id, contact_id, seq)`)
  await dropNameGramTriggers(knex)
  for (const [name, body] of Object.entries(pendingTriggers)) {
    await knex.raw(`CREATE FUNCTION ${PENDING}_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN ${body}; RETURN NULL; END $$`)
  }
  await knex.raw(`
    CREATE TRIGGER contacts_name_pending_inserted AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION ${PENDING}_inserted()`)
  await knex.raw(`
    CREATE TRIGGER contacts_name_pending_deleted AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION ${PENDING}_deleted()`)
  // Row level with a WHEN: a patch that changes no name, liveness or organization costs nothing.
  await knex.raw(`
    CREATE TRIGGER contacts_name_pending_updated AFTER UPDATE OF first_name, last_name, deleted_at, organization_id ON contacts
    FOR EACH ROW WHEN (${NAME_CHANGED})
    EXECUTE FUNCTION ${PENDING}_updated()`)
  await knex.raw(`
    CREATE TRIGGER contacts_name_pending_truncated AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION ${PENDING}_truncated()`)
  await knex.raw(drainFunction)
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('SELECT * FROM contact_name_index_drain(NULL)')
  for (const name of Object.keys(pendingTriggers)) {
    await knex.raw(`DROP TRIGGER IF EXISTS contacts_name_pending_${name} ON contacts`)
    await knex.raw(`DROP FUNCTION IF EXISTS ${PENDING}_${name}()`)
  }
  await knex.raw('DROP FUNCTION IF EXISTS contact_name_index_drain(integer)')
  await knex.raw(`DROP TABLE IF EXISTS ${PENDING}`)
  await createNameGramTriggers(knex)
  await renameLocks.up(knex)
}
