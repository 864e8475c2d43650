/**
 * Two organizations beside the seed's, of 10,000 and 100,000 contacts, for the `scale` group: the
 * same requests on both show whether a request's cost grows with the size of an organization.
 * Made on the first run that needs them, with the seed's own statements (the same people, companies
 * and contacts, with the triggers on), and reused by later runs.
 */
import type { Knex } from 'knex'
import { createPlan, drainNameIndex, seedPeople, stepper } from './seed.js'
import type { PlannedRows } from './seed.js'
import type { Tenant } from './streams.js'

export interface ScaleOrganization extends Tenant {
  /** Its contacts, deleted ones included (one in a hundred, as in the seed). */
  contacts: number
}

export interface ScaleOrganizations {
  smaller: ScaleOrganization
  larger: ScaleOrganization
}

const TABLE = 'bench_scale_organizations'
const CONTACTS = { smaller: 10_000, larger: 100_000 }

/** The sizes at a seed's scale: as given at full size, never below a tenth of it (--quick: 1,000 and 10,000). */
const sizesAt = (scale: number) => ({
  smaller: Math.round(CONTACTS.smaller * Math.min(1, Math.max(scale, 0.1))),
  larger: Math.round(CONTACTS.larger * Math.min(1, Math.max(scale, 0.1)))
})

/** The people and contacts of one organization: the large one's users, a company for ten contacts, nothing else. */
const rowsOf = (contacts: number): PlannedRows => ({
  users: 20, companies: contacts / 10, contacts, pipelines: 0, products: 0, deals: 0, activities: 0, conversations: 0, messages: 0
})

/** Makes the organizations this scale lacks (in one transaction), then brings contacts' statistics up to date. */
export async function ensureScaleOrganizations(db: Knex, scale: number, log: (message: string) => void) {
  await db.raw(`CREATE TABLE IF NOT EXISTS ${TABLE} (contacts int PRIMARY KEY, organization_id int NOT NULL, api_key text NOT NULL)`)
  const sizes = Object.values(sizesAt(scale))
  const present: number[] = (await db.raw(
    `SELECT s.contacts FROM ${TABLE} s JOIN organizations o ON o.id = s.organization_id WHERE s.contacts = ANY(?)`, [sizes]
  )).rows.map((row: { contacts: number }) => row.contacts)
  const missing = sizes.filter((contacts) => !present.includes(contacts))
  if (missing.length === 0) return
  const started = Date.now()
  log(`Making organizations of ${missing.map((n) => n.toLocaleString('en')).join(' and ')} contacts`)
  await db.transaction(async (trx) => {
    const step = stepper(trx, log)
    const organizations = []
    for (const contacts of missing) {
      const [{ id }] = (await trx.raw(`INSERT INTO organizations (name) VALUES (?) RETURNING id`, [`Bench: ${contacts.toLocaleString('en')} contacts`])).rows
      organizations.push({ organizationId: id as number, rows: rowsOf(contacts) })
    }
    await createPlan(trx, organizations)
    const keys = await seedPeople(trx, step)
    await drainNameIndex(trx, step)
    await trx.raw(`DELETE FROM ${TABLE} WHERE contacts = ANY(?)`, [missing])
    for (const { organizationId, rows } of organizations) {
      await trx.raw(`INSERT INTO ${TABLE} VALUES (?, ?, ?)`, [rows.contacts, organizationId, keys.get(organizationId)!])
    }
  })
  for (const table of ['contacts', 'companies', 'users', 'organizations_users', 'api_keys']) await db.raw(`VACUUM (ANALYZE) ${table}`)
  log(`Made them in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

/** The organizations of this scale, with their live contacts' ids; undefined until a run has made them. */
export async function loadScaleOrganizations(db: Knex, scale: number): Promise<ScaleOrganizations | undefined> {
  if (!(await db.raw('SELECT to_regclass(?) IS NOT NULL AS present', [TABLE])).rows[0].present) return undefined
  const sizes = sizesAt(scale)
  const load = async (contacts: number): Promise<ScaleOrganization | undefined> => {
    const row = (await db.raw(`SELECT organization_id, api_key FROM ${TABLE} WHERE contacts = ?`, [contacts])).rows[0]
    if (!row) return undefined
    const ids = (await db.raw('SELECT id FROM contacts WHERE organization_id = ? AND deleted_at IS NULL ORDER BY id', [row.organization_id])).rows
    return { organizationId: row.organization_id, apiKey: row.api_key, contacts, contactIds: Int32Array.from(ids.map((r: { id: number }) => r.id)) }
  }
  const smaller = await load(sizes.smaller)
  const larger = await load(sizes.larger)
  return smaller && larger ? { smaller, larger } : undefined
}
