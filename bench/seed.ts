import type { Knex } from 'knex'
import { generateApiKey } from '../src/authentication.js'
import { COUNTED_TABLES } from '../migrations/20261121000900_record_counts.js'
import { DAY_COUNTS, recountedDays } from '../migrations/20261125000100_activity_day_counts.js'
import { isCitus } from '../migrations/lib/citus.js'

/**
 * Seeds the benchmark database with set-based SQL (INSERT ... SELECT over generate_series):
 * one large organization (at scale 1: 1,000,000 contacts, 100,000 companies, 200,000 deals in
 * 2 pipelines with products, 500,000 activities, 100,000 conversations with 1,000,000 messages) and
 * 999 small ones with a few hundred records
 * each. Users, memberships and API keys are real rows (the key hash is what the service checks).
 */

export interface SeededOrganization {
  organizationId: number
  apiKey: string
}

export interface SeedSummary {
  scale: number
  seconds: number
  large: SeededOrganization & { rows: Record<string, number> }
  small: SeededOrganization[]
}

// bcrypt (cost 10) of 'bench-password': the users can sign in, and no hashing runs per row.
const PASSWORD_HASH = '$2b$10$WEbOrDwrMU/fk3tdEqhPYu/bi8Rp0WSeKBTqQYGxMnNu3EGV65jjm'

// Small word lists combined by modulo with coprime lengths, so names repeat rarely and trigram
// search has realistic text (accents included) to chew on.
export const FIRST_NAMES = [
  'Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'John', 'Radia', 'Tim',
  'Hedy', 'Edsger', 'Katherine', 'Donald', 'Sophie', 'Guido', 'Anita', 'Bjarne', 'Shafi', 'Niklaus', 'Lynn',
  'James', 'Jean', 'Martin', 'Mary', 'Claude', 'Carol', 'Leslie', 'Annie', 'Ivan', 'Joan', 'Charles', 'Zoë',
  'José', 'Åsa', 'Björn', 'Chloé', 'Renée', 'Çağla', 'Søren', 'Mónica', 'François', 'Inés', 'Jürgen', 'Noël',
  'Elena', 'Marco', 'Priya', 'Ravi', 'Mei', 'Hiroshi', 'Yuki', 'Fatima', 'Omar', 'Olga', 'Dmitri', 'Amara',
  'Kwame', 'Lucía', 'Mateo', 'Sven', 'Ingrid', 'Pedro', 'Ana', 'Tomás'
]
export const LAST_NAMES = [
  'Lovelace', 'Turing', 'Hopper', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Backus',
  'Perlman', 'Berners-Lee', 'Lamarr', 'Dijkstra', 'Johnson', 'Knuth', 'Wilson', 'van Rossum', 'Borg', 'Stroustrup',
  'Goldwasser', 'Wirth', 'Conway', 'Gosling', 'Sammet', 'Fowler', 'Keller', 'Shannon', 'Shaw', 'Lamport',
  'Easley', 'Sutherland', 'Clarke', 'Babbage', 'Müller', 'García', 'Núñez', 'Østergaard', 'Lefèvre', 'Çelik',
  'Åberg', 'Dvořák', 'Rossi', 'Bianchi', 'Sharma', 'Patel', 'Chen', 'Wang', 'Tanaka', 'Suzuki', 'Haddad',
  'Nasser', 'Ivanova', 'Petrov', 'Okafor', 'Mensah', 'Fernández', 'López', 'Lindqvist', 'Nilsson', 'Santos',
  'Silva', 'Kowalski', 'Nowak', 'Novák', 'Horvat', 'Papadopoulos', 'Yılmaz', 'Kim', 'Park', 'Nguyen', 'Tran',
  'Murphy', "O'Brien", 'MacLeod', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker',
  'Hoffmann', 'Dubois', 'Moreau', 'Laurent', 'Girard', 'Bonnet', 'Lambert', 'Fontaine', 'Rousseau', 'Vincent',
  'Jansen', 'de Vries', 'Bakker', 'Visser', 'Smit'
]
const COMPANY_WORDS = [
  'Acme', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay', 'Stark', 'Wayne', 'Wonka', 'Tyrell', 'Cyberdyne',
  'Soylent', 'Aperture', 'Black Mesa', 'Massive Dynamic', 'Oscorp', 'Gringotts', 'Monarch', 'Nakatomi', 'Pied Piper',
  'Dunder', 'Sterling', 'Prestige', 'Bluth', 'Krusty', 'Duff', 'Gekko', 'Virtucon', 'Zorg', 'Ollivander', 'Nordlys',
  'Sonnenschein', 'Mistral', 'Aurora', 'Cumbre', 'Fjord', 'Sakura', 'Baobab', 'Kilimanjaro', 'Andes', 'Tundra'
]
const COMPANY_SUFFIXES = ['Industries', 'Labs', 'Corp', 'Systems', 'Partners', 'Holdings', 'Logistics', 'Foods', 'Media', 'Analytics', 'Studios']
const INDUSTRIES = ['Software', 'Retail', 'Manufacturing', 'Finance', 'Healthcare', 'Education', 'Logistics', 'Media', 'Energy']
const SIZES = ['Small', 'Medium', 'Large']
const DOMAINS = ['example.com', 'mail.example.org', 'corp.example.net', 'inbox.example.io', 'example.co.uk', 'post.example.de', 'correo.example.es']
const PIPELINES = ['Sales', 'Renewals']
const STAGES = ['Lead', 'Qualified', 'Proposal', 'Negotiation', 'Closing']
const PRODUCT_WORDS = ['Licence', 'Support plan', 'Onboarding', 'Training day', 'Hardware kit', 'Consulting hour', 'Integration', 'Audit']
export const ACTIVITY_TYPES = ['call', 'meeting', 'task', 'deadline', 'email', 'lunch']
const SUBJECTS = ['Call with', 'Meeting with', 'Follow up with', 'Demo for', 'Lunch with', 'Contract review with', 'Check in with']

/** The rows per organization; the large one at scale 1 is the million-contact organization. */
const LARGE = {
  users: 20, companies: 100_000, contacts: 1_000_000, pipelines: 2, products: 200, deals: 200_000, activities: 500_000,
  conversations: 100_000, messages: 1_000_000
}
const SMALL = { users: 2, companies: 20, contacts: 200, pipelines: 1, products: 5, deals: 40, activities: 100, conversations: 20, messages: 100 }
const SMALL_ORGANIZATIONS = 999

/** Tables the seeded tables' triggers fill (their indexes are rebuilt after the load too). */
const DERIVED_TABLES = ['contact_name_grams', 'contact_name_gram_counts', 'custom_field_ranges']
const SEEDED_TABLES = [
  'companies', 'contacts', 'pipelines', 'pipeline_stages', 'products', 'deals', 'deal_products', 'activities', 'conversations', 'conversation_messages'
]
const CHANNELS = ['whatsapp', 'instagram', 'messenger', 'webchat', 'sms', 'playground']
// 'snoozed' (the third) goes with a snoozed_until, as the schema requires.
const CONVERSATION_STATUSES = ['open', 'pending', 'snoozed', 'resolved']

/** An SQL array literal of constant words (no bindings, so a list can appear twice in a statement). */
const words = (list: string[]) => `ARRAY[${list.map((word) => `'${word.replace(/'/g, "''")}'`).join(', ')}]`
/** The word of a list at a generated position. */
const pick = (list: string[], index: string) => `(${words(list)})[1 + (${index}) % ${list.length}]`

export async function seed(db: Knex, scale: number, log: (message: string) => void): Promise<SeedSummary> {
  const started = Date.now()
  const large = scaled(LARGE, scale)
  const smallCount = Math.max(10, Math.round(SMALL_ORGANIZATIONS * Math.min(scale, 1)))

  // One connection for the whole seed: the numbering tables below are temporary.
  return db.transaction(async (trx) => {
    const step = stepper(trx, log)
    await trx.raw(`SET LOCAL maintenance_work_mem = '256MB'`)
    await trx.raw(`SET LOCAL work_mem = '64MB'`)
    await trx.raw('SET LOCAL synchronous_commit = off')
    // On a Citus coordinator the index drops below run on every shard in parallel, after which
    // Citus refuses writes to reference tables in the same transaction; one connection per node does both.
    if (await isCitus(trx)) await trx.raw(`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`)

    // Secondary indexes are dropped for the load and rebuilt once afterwards (far faster than
    // maintaining trigram GIN indexes row by row); constraints stay, so every reference is checked.
    const indexes: { indexname: string; indexdef: string }[] = (
      await trx.raw(
        `SELECT i.indexname, i.indexdef FROM pg_indexes i
         WHERE i.schemaname = 'public' AND i.tablename = ANY(?)
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
        [[...SEEDED_TABLES, ...DERIVED_TABLES]]
      )
    ).rows
    for (const { indexname } of indexes) await trx.raw('DROP INDEX ??', [indexname])

    // Every reference below is made by joining existing rows, so when the only triggers on these
    // tables are the record counts (recomputed at the end) and, in an older checkout's schema, the
    // change marks (which need nothing: no page has read the new organizations yet), the per-row
    // foreign key checks are skipped for the load. Any other trigger keeps them all on.
    const otherTriggers = (
      await trx.raw(
        `SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text = ANY(?) AND tgname NOT LIKE '%\_count\_%' AND tgname NOT LIKE '%\_marks\_%'`,
        [SEEDED_TABLES]
      )
    ).rows
    const bulk = otherTriggers.length === 0
    if (bulk) await trx.raw('SET LOCAL session_replication_role = replica')

    const [{ id: largeId }] = (await trx.raw(`INSERT INTO organizations (name) VALUES ('Bench: the million-contact organization') RETURNING id`)).rows
    const smallIds: number[] = (
      await trx.raw(`INSERT INTO organizations (name) SELECT 'Bench: small organization ' || g FROM generate_series(1, ?) g ORDER BY g RETURNING id`, [smallCount])
    ).rows.map((r: { id: number }) => r.id)

    await createPlan(trx, [{ organizationId: largeId, rows: large }, ...smallIds.map((organizationId) => ({ organizationId, rows: SMALL }))])
    const apiKeys = await seedPeople(trx, step)

    await step('pipelines', `
      INSERT INTO pipelines (organization_id, name, type, position)
      SELECT p.organization_id, ${pick(PIPELINES, 'g - 1')}, 'deal', g FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.pipelines) g`)
    await number(trx, 'bench_pipelines', 'SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id FROM pipelines')
    await step('pipeline stages', `
      INSERT INTO pipeline_stages (organization_id, pipeline_id, name, position, probability)
      SELECT pl.organization_id, pl.id, ${pick(STAGES, 's - 1')}, s, s * 20 FROM bench_pipelines pl CROSS JOIN generate_series(1, ?) s`,
      [STAGES.length])
    await trx.raw(`CREATE TEMP TABLE bench_stages ON COMMIT DROP AS
      SELECT organization_id, pipeline_id, position AS rn, id FROM pipeline_stages`)
    await trx.raw('CREATE INDEX ON bench_stages (pipeline_id, rn)')
    await trx.raw('ANALYZE bench_stages')

    await step('products', `
      INSERT INTO products (organization_id, name, sku, price, currency, tax_percentage)
      SELECT p.organization_id, ${pick(PRODUCT_WORDS, 'g')} || ' ' || g, 'SKU-' || lpad(g::text, 5, '0'), 10 + (g % 50) * 10, 'EUR',
        CASE WHEN g % 3 = 0 THEN 0 ELSE 21 END
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.products) g`)
    await number(trx, 'bench_products', 'SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id FROM products')

    // One deal in ten is won and one in ten lost, with the date of that outcome (schema rule).
    await step('deals', `
      INSERT INTO deals (organization_id, name, amount, currency, status, pipeline_id, pipeline_stage_id, contact_id, company_id,
        created_by_user_id, owned_by_user_id, expected_close_date, won_date, lost_date, created_at, updated_at)
      SELECT p.organization_id, ${pick(COMPANY_WORDS, 'g')} || ' deal ' || g, (g % 1000) * 100 + 0.5, 'EUR', s.status,
        pl.id, st.id, ct.id, CASE WHEN g % 3 <> 0 THEN co.id END, u.id, u.id,
        current_date + (g % 365 - 90), CASE WHEN s.status = 'won' THEN now() END, CASE WHEN s.status = 'lost' THEN now() END,
        now() - (g % 730) * interval '1 day', now() - (g % 60) * interval '1 day'
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.deals) g
      CROSS JOIN LATERAL (SELECT CASE g % 10 WHEN 0 THEN 'won' WHEN 1 THEN 'lost' ELSE 'open' END AS status) s
      JOIN bench_pipelines pl ON pl.organization_id = p.organization_id AND pl.rn = 1 + g % p.pipelines
      JOIN bench_stages st ON st.pipeline_id = pl.id AND st.rn = 1 + (g / p.pipelines) % ?
      JOIN bench_contacts ct ON ct.organization_id = p.organization_id AND ct.rn = 1 + (g * 7) % (p.contacts - p.contacts / 100)
      JOIN bench_companies co ON co.organization_id = p.organization_id AND co.rn = 1 + (g * 3) % p.companies
      JOIN bench_users u ON u.organization_id = p.organization_id AND u.rn = 1 + g % p.users`, [STAGES.length])
    await number(trx, 'bench_deals', 'SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id FROM deals')

    // One product line on every deal and a second on every other one; totals computed exactly.
    await step('deal products', `
      INSERT INTO deal_products (organization_id, deal_id, product_id, quantity, price, tax_percentage,
        total_amount_without_tax, total_amount_with_tax, name, sku)
      SELECT p.organization_id, d.id, pr.id, q.quantity, pr.price, pr.tax_percentage, q.quantity * pr.price,
        round(q.quantity * pr.price * (1 + pr.tax_percentage / 100), 2), pr.name, pr.sku
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.deals * 3 / 2) g
      CROSS JOIN LATERAL (SELECT 1 + g % 4 AS quantity) q
      JOIN bench_deals d ON d.organization_id = p.organization_id AND d.rn = 1 + g % p.deals
      JOIN bench_products bp ON bp.organization_id = p.organization_id AND bp.rn = 1 + g % p.products
      JOIN products pr ON pr.organization_id = bp.organization_id AND pr.id = bp.id`)

    // Spread over two years around today: about 4,800 activities a week in the large organization.
    await step('activities', `
      INSERT INTO activities (organization_id, created_by_user_id, assigned_to_user_id, subject, note, start_date, end_date,
        start_time, end_time, duration, deal_id, contact_id, company_id, activity_type, done, created_at, updated_at)
      SELECT p.organization_id, u.id, u.id, ${pick(SUBJECTS, 'g')} || ' ' || ${pick(FIRST_NAMES, 'g / 7')}, 'Notes ' || g,
        current_date + (g % 730 - 365), current_date + (g % 730 - 365),
        time '08:00' + (g % 20) * interval '30 minutes', time '08:00' + (g % 20) * interval '30 minutes' + interval '45 minutes',
        45, CASE WHEN g % 3 = 0 THEN d.id END, ct.id, CASE WHEN g % 2 = 0 THEN co.id END,
        ${pick(ACTIVITY_TYPES, 'g')}, g % 4 = 0, now() - (g % 365) * interval '1 day', now() - (g % 30) * interval '1 day'
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.activities) g
      JOIN bench_users u ON u.organization_id = p.organization_id AND u.rn = 1 + g % p.users
      JOIN bench_deals d ON d.organization_id = p.organization_id AND d.rn = 1 + g % p.deals
      JOIN bench_contacts ct ON ct.organization_id = p.organization_id AND ct.rn = 1 + (g * 11) % (p.contacts - p.contacts / 100)
      JOIN bench_companies co ON co.organization_id = p.organization_id AND co.rn = 1 + (g * 13) % p.companies`)

    // The inbox: conversations on every channel and status, each assigned to one user, their
    // latest activity spread over the last ~70 days; messages alternate inbound and outbound.
    await step('conversations', `
      INSERT INTO conversations (organization_id, channel, contact_id, status, snoozed_until, assignee_user_ids, unread_count,
        last_message_at, last_message_preview, last_inbound_at, created_at, updated_at)
      SELECT p.organization_id, ${pick(CHANNELS, 'g')}, ct.id, ${pick(CONVERSATION_STATUSES, 'g')},
        CASE WHEN g % ${CONVERSATION_STATUSES.length} = 2 THEN now() + interval '1 day' END, ARRAY[u.id], g % 3,
        now() - (g % 100000) * interval '1 minute', 'Message ' || g, now() - (g % 100000) * interval '1 minute',
        now() - (g % 365) * interval '1 day', now() - (g % 30) * interval '1 day'
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.conversations) g
      JOIN bench_contacts ct ON ct.organization_id = p.organization_id AND ct.rn = 1 + (g * 17) % (p.contacts - p.contacts / 100)
      JOIN bench_users u ON u.organization_id = p.organization_id AND u.rn = 1 + g % p.users`)
    await number(trx, 'bench_conversations', 'SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id, channel FROM conversations')
    await step('conversation messages', `
      INSERT INTO conversation_messages (organization_id, conversation_id, channel, direction, sender_type, content, status, created_at, updated_at)
      SELECT p.organization_id, c.id, c.channel, CASE WHEN g % 2 = 0 THEN 'inbound' ELSE 'outbound' END,
        CASE WHEN g % 2 = 0 THEN 'contact' ELSE 'user' END, ${pick(SUBJECTS, 'g')} || ' message ' || g,
        CASE WHEN g % 2 = 0 THEN 'received' ELSE 'delivered' END, now() - g * interval '1 second', now() - g * interval '1 second'
      FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.messages) g
      JOIN bench_conversations c ON c.organization_id = p.organization_id AND c.rn = 1 + g % p.conversations`)

    if (bulk) {
      await trx.raw('SET LOCAL session_replication_role = origin')
      await step('record counts', `DELETE FROM record_counts WHERE organization_id IN (SELECT organization_id FROM bench_plan)`)
      for (const table of COUNTED_TABLES) {
        await trx.raw(`
          INSERT INTO record_counts (organization_id, table_name, slot, live)
          SELECT organization_id, ?, 0, count(*) FROM ${table}
          WHERE organization_id IN (SELECT organization_id FROM bench_plan) AND deleted_at IS NULL GROUP BY organization_id`, [table])
      }
      // An older checkout's schema (--service-dir) may not have the day counts.
      if ((await trx.raw('SELECT to_regclass(?) IS NOT NULL AS present', [DAY_COUNTS])).rows[0].present) {
        await trx.raw(`DELETE FROM ${DAY_COUNTS} WHERE organization_id IN (SELECT organization_id FROM bench_plan)`)
        await step('activity day counts', recountedDays('organization_id IN (SELECT organization_id FROM bench_plan)'))
      }
    }
    await drainNameIndex(trx, step)
    for (const { indexname, indexdef } of indexes) await step(`index ${indexname}`, indexdef)

    const rows: Record<string, number> = {}
    for (const table of SEEDED_TABLES) {
      rows[table] = Number((await trx.raw(`SELECT count(*) AS n FROM ${table} WHERE organization_id = ? AND deleted_at IS NULL`, [largeId])).rows[0].n)
    }
    const keyOf = (organizationId: number) => apiKeys.get(organizationId)!
    return {
      scale,
      seconds: 0,
      large: { organizationId: largeId, apiKey: keyOf(largeId), rows },
      small: smallIds.slice(0, 10).map((organizationId) => ({ organizationId, apiKey: keyOf(organizationId) }))
    }
  }).then(async (summary) => {
    // Outside the load transaction: statistics for the planner, and the visibility map that
    // index-only scans need (what autovacuum would have done to tables of this age).
    for (const table of ['users', 'organizations', 'organizations_users', 'api_keys', 'record_counts', DAY_COUNTS, ...SEEDED_TABLES, ...DERIVED_TABLES, 'contact_name_pending']) {
      // A derived table may be missing in an older checkout's schema (--service-dir).
      const exists = (await db.raw('SELECT to_regclass(?) IS NOT NULL AS present', [table])).rows[0].present
      if (exists) await db.raw(`VACUUM (ANALYZE) ${table}`)
    }
    return { ...summary, seconds: Math.round((Date.now() - started) / 100) / 10 }
  })
}

export type Step = (label: string, sql: string, bindings?: readonly unknown[]) => Promise<{ rowCount?: number | null; rows: any[] }>

/** Runs the statements of a seed on its transaction, logging each one's rows and seconds. */
export function stepper(trx: Knex.Transaction, log: (message: string) => void): Step {
  return async (label, sql, bindings = []) => {
    const t = Date.now()
    const result = await trx.raw(sql, bindings as any)
    log(`  ${label}: ${result.rowCount ?? ''} rows, ${((Date.now() - t) / 1000).toFixed(1)} s`)
    return result
  }
}

export type PlannedRows = typeof LARGE

/** The rows to generate per organization, in the temporary table bench_plan the seed's statements read. */
export async function createPlan(trx: Knex.Transaction, organizations: { organizationId: number; rows: PlannedRows }[]) {
  await trx.raw(`CREATE TEMP TABLE bench_plan (
    organization_id int PRIMARY KEY, users int, companies int, contacts int, pipelines int, products int, deals int, activities int,
    conversations int, messages int
  ) ON COMMIT DROP`)
  const columns = Object.keys(LARGE) as (keyof PlannedRows)[]
  await trx.raw(
    `INSERT INTO bench_plan SELECT * FROM unnest(?::int[], ${columns.map(() => '?::int[]').join(', ')})`,
    [organizations.map((o) => o.organizationId), ...columns.map((column) => organizations.map((o) => o.rows[column]))]
  )
}

const PLANNED = 'WHERE organization_id IN (SELECT organization_id FROM bench_plan)'

/**
 * The planned organizations' people and contacts: users (the first one the owner) with their
 * memberships, one API key each (owned by the owner, hashed as the service hashes keys),
 * companies and contacts; each numbered 1..n per organization in a temporary table (bench_users,
 * bench_companies, bench_contacts) for the rows that refer to them. Returns the keys by organization.
 */
export async function seedPeople(trx: Knex.Transaction, step: Step): Promise<Map<number, string>> {
  await step('users', `
    INSERT INTO users (email, password, first_name, last_name)
    SELECT 'bench-' || p.organization_id || '-' || g || '@bench.example', ?,
      ${pick(FIRST_NAMES, 'g + p.organization_id')}, ${pick(LAST_NAMES, 'g * 7 + p.organization_id')}
    FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.users) g`, [PASSWORD_HASH])
  await number(trx, 'bench_users', `
    SELECT substring(email FROM '^bench-(\\d+)-')::int AS organization_id, substring(email FROM '-(\\d+)@')::int AS rn, id
    FROM users WHERE email LIKE 'bench-%@bench.example' AND substring(email FROM '^bench-(\\d+)-')::int IN (SELECT organization_id FROM bench_plan)`)
  await step('memberships', `
    INSERT INTO organizations_users (organization_id, user_id, role)
    SELECT organization_id, id, CASE rn WHEN 1 THEN 'owner' WHEN 2 THEN 'admin' ELSE 'member' END FROM bench_users`)

  await step('companies', `
    INSERT INTO companies (organization_id, name, website, industry, size, created_by_user_id, owned_by_user_id, created_at, updated_at)
    SELECT p.organization_id,
      ${pick(COMPANY_WORDS, 'g')} || ' ' || ${pick(COMPANY_SUFFIXES, 'g / 41')} || ' ' || g,
      'https://' || lower(replace(${pick(COMPANY_WORDS, 'g')}, ' ', '-')) || '-' || g || '.example.com',
      ${pick(INDUSTRIES, 'g')}, ${pick(SIZES, 'g')}, u.id, u.id,
      now() - (g % 1000) * interval '1 day', now() - (g % 100) * interval '1 day'
    FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.companies) g
    JOIN bench_users u ON u.organization_id = p.organization_id AND u.rn = 1 + g % p.users`)
  await number(trx, 'bench_companies', `SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id FROM companies ${PLANNED}`)

  // One contact in a hundred is soft-deleted, so the deleted_at filter has something to do.
  await step('contacts', `
    INSERT INTO contacts (organization_id, first_name, last_name, email, phone, phone_e164, phone_country_code,
      phone_country_iso, company_id, owned_by_user_id, created_by_user_id, created_at, updated_at, deleted_at)
    SELECT p.organization_id, f.name, l.name,
      regexp_replace(lower(unaccent(f.name || '.' || l.name)), '[^a-z.]', '', 'g') || g || '@' || ${pick(DOMAINS, 'g')},
      '+1 212 ' || (2000000 + g % 8000000), '+1212' || (2000000 + g % 8000000), '+1', 'US',
      CASE WHEN g % 5 <> 0 THEN c.id END, u.id, u.id,
      now() - (g % 1095) * interval '1 day' - (g % 86400) * interval '1 second', now() - (g % 30) * interval '1 day',
      CASE WHEN g % 100 = 0 THEN now() END
    FROM bench_plan p CROSS JOIN LATERAL generate_series(1, p.contacts) g
    CROSS JOIN LATERAL (SELECT ${pick(FIRST_NAMES, 'g')} AS name) f
    CROSS JOIN LATERAL (SELECT ${pick(LAST_NAMES, 'g / 67 + g')} AS name) l
    JOIN bench_users u ON u.organization_id = p.organization_id AND u.rn = 1 + g % p.users
    JOIN bench_companies c ON c.organization_id = p.organization_id AND c.rn = 1 + g % p.companies`)
  await number(trx, 'bench_contacts', `SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS rn, id FROM contacts ${PLANNED} AND deleted_at IS NULL`)

  // One API key per organization, owned by its owner, hashed as the service hashes keys.
  const owners: { organization_id: number; id: number }[] = (await trx.raw('SELECT organization_id, id FROM bench_users WHERE rn = 1 ORDER BY organization_id')).rows
  const keys = owners.map((owner) => ({ ...owner, ...generateApiKey() }))
  await step('api keys', `
    INSERT INTO api_keys (organization_id, user_id, name, prefix, key_hash)
    SELECT * FROM unnest(?::int[], ?::int[], ?::text[], ?::text[], ?::text[])`,
    [keys.map((k) => k.organization_id), keys.map((k) => k.id), keys.map(() => 'bench'), keys.map((k) => k.prefix), keys.map((k) => k.hash)])

  return new Map(keys.map((k) => [k.organization_id, k.key]))
}

/**
 * The name index is kept behind the writes in an older checkout's schema: a load leaves every
 * contact pending, and the service would start with them all to index. (The pending table keeps
 * its index through the load: the drain finds each contact's rows by it.)
 */
export async function drainNameIndex(trx: Knex.Transaction, step: Step) {
  if ((await trx.raw("SELECT to_regproc('contact_name_index_drain') IS NOT NULL AS present")).rows[0].present) {
    await step('contact name index', 'SELECT contact_name_index_drain(NULL)')
  }
}

const scaled = (sizes: typeof LARGE, scale: number) =>
  Object.fromEntries(
    Object.entries(sizes).map(([key, value]) => [key, key === 'users' || key === 'pipelines' ? value : Math.max(10, Math.round(value * scale))])
  ) as typeof LARGE

/** A temporary table numbering rows 1..n per organization, so generated rows can reference them by position. */
async function number(trx: Knex.Transaction, name: string, select: string) {
  await trx.raw(`CREATE TEMP TABLE ${name} ON COMMIT DROP AS ${select}`)
  await trx.raw(`CREATE INDEX ON ${name} (organization_id, rn)`)
  await trx.raw(`ANALYZE ${name}`)
}
