import { Conflict, NotFound } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../declarations.js'
import { fieldError } from '../../hooks/errors.js'
import { preparedRows } from '../../db.js'
import { RecordService } from '../../engine/record-service.js'
import type { TriggerFamily } from '../../engine/trigger-families.js'
import { USER_SUMMARY } from '../../engine/read-model.js'
import type { Relation } from '../../engine/read-model.js'
import { containsPattern } from '../../engine/like.js'
import type { NameIndexBacklog } from './name-index.js'
import type { Contact, ContactData, ContactDuplicateSearch, ContactMerge, ContactPatch, ContactQuery, ContactSearch } from './contacts.schema.js'

export type { Contact, ContactData, ContactDuplicateSearch, ContactMerge, ContactPatch, ContactQuery, ContactSearch }
export type ContactParams = KnexAdapterParams<ContactQuery>

/**
 * Every table with a contact_id foreign key to contacts (migrations 20261121000200 deals and
 * activities, 20261121001000 reservations, 20261123000500 conversations), by its service path.
 */
export const CONTACT_REFERENCES = ['deals', 'activities', 'conversations', 'reservations'] as const

/** What a merge changed, for the events announced once it has committed. */
export interface MergeEffects {
  merged: Record<string, any>
  removed: Record<string, any>[]
  moved: Record<(typeof CONTACT_REFERENCES)[number], Record<string, any>[]>
}

declare module '@feathersjs/feathers' {
  interface Params {
    mergeEffects?: MergeEffects
  }
}

/**
 * Terms contact_name_grams answers: 3 or 4 printable ASCII characters, whose folded form
 * (search_fold: unaccent, then lower) is their lower case, of the length of a stored gram.
 */
const SHORT_ASCII_TERM = /^[\x20-\x7e]{3,4}$/

/** The value duplicates share, per mode: the expressions search compares, so search and duplicates agree. */
const DUPLICATE_VALUES = {
  email: 'lower(email)',
  phone: "coalesce(phone_country_code || ' ', '') || phone_normalized",
  name: 'search_name'
} as const
/** The ids a group lists; its count says how many there are in all. */
const GROUP_IDS = 20

/** Fields a merge fills on the primary from the duplicates when the primary has none. */
const FILLED = ['last_name', 'email', 'company_id', 'owned_by_user_id', 'avatar_url']

/** The primary's empty fields, filled from the first duplicate (in the order given) that has them; its custom values win. */
function filledFields(primary: Record<string, any>, duplicates: Record<string, any>[]) {
  const changes: Record<string, unknown> = {}
  for (const field of FILLED) {
    if (primary[field] !== null) continue
    const source = duplicates.find((duplicate) => duplicate[field] !== null)
    if (source) changes[field] = source[field]
  }
  const values = [...duplicates].reverse().map((duplicate) => duplicate.custom_fields ?? {})
  changes.custom_fields = JSON.stringify(Object.assign({}, ...values, primary.custom_fields ?? {}))
  return changes
}

/**
 * What routes a channel's messages to a contact and the team's replies back to a person: the
 * channels' ids of the person, the web-chat user id a site signs (external_id) and the phone that
 * SMS and WhatsApp match and send to (src/channels/contacts.ts). Whoever holds one of them reads
 * the contact's threads, so a merge never takes one from a duplicate unless the caller says so.
 * Each is compared as the channels match it: the phone by its E.164 digits.
 */
const IDENTITIES: { field: string; columns: string[]; value: (row: Record<string, any>) => string | null }[] = [
  ...['external_id', 'channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_messenger_user_id', 'channel_instagram_user_id']
    .map((column) => ({ field: column, columns: [column], value: (row: Record<string, any>) => row[column] })),
  {
    field: 'phone',
    columns: ['phone', 'phone_country_code', 'phone_country_iso', 'phone_normalized'],
    value: (row) => (row.phone_normalized === null ? null : `${(row.phone_country_code ?? '').replace(/\D/g, '')}${row.phone_normalized}`)
  }
]

/** The refusal of a merge whose duplicates hold other identities than the primary: each field, with the contacts holding one. */
export const otherIdentities = (holders: Record<string, number[]>) => new Conflict('The duplicates hold other channel identities than the primary', {
  errors: Object.fromEntries(Object.entries(holders).map(([field, ids]) => [field, `differs on contact ${ids.join(', ')}: keep_identity_from names whose identity the merged contact keeps`]))
})

/** 409 naming each identity some duplicate holds otherwise than the primary (a primary without one included). */
function refuseOtherIdentities(primary: Record<string, any>, duplicates: Record<string, any>[]) {
  const holders: Record<string, number[]> = {}
  for (const { field, value } of IDENTITIES) {
    const own = value(primary)
    const ids = duplicates.filter((duplicate) => value(duplicate) !== null && value(duplicate) !== own).map((duplicate) => duplicate.id)
    if (ids.length) holders[field] = ids
  }
  if (Object.keys(holders).length) throw otherIdentities(holders)
}

/** The identity columns of the kept duplicate that it holds: the primary takes them and the duplicate loses them. */
function identityOf(kept: Record<string, any>) {
  const columns = IDENTITIES.filter(({ value }) => value(kept) !== null).flatMap((identity) => identity.columns)
  return Object.fromEntries(columns.map((column) => [column, kept[column]]))
}

// A deleted company joins as null: its contacts stay, pointing at a company no longer shown.
export const COMPANY_AND_OWNER: Relation[] = [
  { from: 'company_id', as: 'company', table: 'companies', columns: ['id', 'name'] },
  { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: USER_SUMMARY, tenant: false }
]

/**
 * The digits a phone search compares: every digit of the number, without the international
 * prefix ('+' or '00') and the contact's own country code when the number is written with them,
 * so '+44 20 7946 0958' and '20 7946 0958' (country code +44) both become '2079460958'.
 */
export function normalizePhone(phone: string | null | undefined, countryCode: string | null | undefined): string | null {
  if (phone === null || phone === undefined) return null
  const trimmed = phone.trim()
  let digits = trimmed.replace(/\D/g, '')
  const international = trimmed.startsWith('+') || trimmed.startsWith('00')
  if (international) {
    if (trimmed.startsWith('00')) digits = digits.slice(2)
    const code = (countryCode ?? '').replace(/\D/g, '')
    if (code && digits.startsWith(code)) digits = digits.slice(code.length)
  }
  return digits || null
}


export class ContactService extends RecordService<Contact, ContactData, ContactParams, ContactPatch> {
  /** Set by the resource (contacts.ts): a write answers once the name index is not far behind. */
  nameIndex?: NameIndexBacklog

  async _create(data: any, params: ContactParams = {}) {
    return this.keepingUp(params, await super._create(data, params))
  }

  async _patch(id: NullableId, data: any, params: ContactParams = {}) {
    return this.keepingUp(params, await super._patch(id, data, params))
  }

  async _remove(id: NullableId, params: ContactParams = {}) {
    return this.keepingUp(params, await super._remove(id, params))
  }

  /** Waits for the drain when the index is far behind; never inside a transaction, which would hold it open. */
  private async keepingUp<T>(params: ContactParams, result: T): Promise<T> {
    if (this.nameIndex && !this.dbOf(params).isTransaction) await this.nameIndex.caughtUp()
    return result
  }

  /**
   * name: case- and accent-insensitive partial match on "first last" (so on either name too);
   * email: case-insensitive partial match; phone: digits partial match within a country code.
   * Each mode's condition is the expression of a trigram GIN index led by organization_id.
   */
  async search(data: ContactSearch, params: ContactParams = {}) {
    const query = this.knex('contacts').where('organization_id', data.organization_id!).whereNull('deleted_at')
    const term = data.searchTerm.trim().replace(/\s+/g, ' ')
    let order: string[]
    if (data.searchIn === 'name' && SHORT_ASCII_TERM.test(term)) {
      return this.nameGramPage(data, term.toLowerCase(), params)
    }
    if (data.searchIn === 'name') {
      // search_name is the stored, folded "first last" (migration 20261121000310), indexed by trigram.
      query.whereRaw('search_name LIKE search_fold(?)', [containsPattern(term)])
      order = ['first_name', 'last_name']
    } else if (data.searchIn === 'email') {
      query.whereRaw('lower(email) LIKE ?', [containsPattern(term)])
      order = ['email']
    } else {
      const digits = normalizePhone(term, data.phone_country_code) ?? ''
      query.where('phone_country_code', data.phone_country_code!).where('phone_normalized', 'like', containsPattern(digits))
      order = ['phone_normalized']
    }
    return this.searchPage(query, order, data)
  }

  /**
   * A name search for a term of 3 or 4 characters, in one statement and one snapshot. The index
   * contact_name_grams (migration 20261123001500) holds the term's matches in the search's
   * (first_name, last_name, id) order, and contact_name_gram_counts their number; it is kept
   * behind the writes (migration 20261127120000), so the contacts written since its last drain
   * (contact_name_pending) are read as they are now: their grams are left out of the page, their
   * current names that match are merged into it, and the total is corrected by both. Planned
   * from the statistics of a table whose size swings, so the plan is pinned: each pending contact
   * is read by its key (the LATERAL ... LIMIT 1 is never turned into a join over contacts), and
   * NOT IN over the pending set is a hashed lookup.
   */
  private async nameGramPage(page: ContactSearch, gram: string, params: ContactParams) {
    const limit = page.$limit ?? 10
    const skip = page.$skip ?? 0
    const db = this.dbOf(params)
    const rows = await preparedRows<Record<string, any>>(db, { raw: db.raw(`WITH pending AS (
         SELECT DISTINCT ON (contact_id) contact_id, indexed_search_name FROM contact_name_pending
         WHERE organization_id = :organization ORDER BY contact_id, seq
       ), written AS (
         SELECT c.first_name, c.last_name, c.id AS contact_id FROM pending AS w
         CROSS JOIN LATERAL (SELECT first_name, last_name, id FROM contacts
           WHERE organization_id = :organization AND id = w.contact_id AND deleted_at IS NULL AND strpos(search_name, :gram) > 0 LIMIT 1) AS c
       )
       SELECT c.*, t.total AS search_total
       FROM (SELECT (SELECT coalesce(sum(entries), 0) FROM contact_name_gram_counts WHERE organization_id = :organization AND gram = :gram)
               - (SELECT count(*) FROM pending WHERE strpos(indexed_search_name, :gram) > 0)
               + (SELECT count(*) FROM written) AS total) AS t
       LEFT JOIN LATERAL (
         SELECT * FROM (
           (SELECT first_name, last_name, contact_id FROM contact_name_grams AS k
            WHERE organization_id = :organization AND gram = :gram AND contact_id NOT IN (SELECT contact_id FROM pending)
            ORDER BY first_name, last_name, contact_id LIMIT :reach)
           UNION ALL SELECT * FROM written
         ) AS m ORDER BY first_name, last_name, contact_id LIMIT :limit OFFSET :skip
       ) AS p ON true
       LEFT JOIN contacts AS c ON c.organization_id = :organization AND c.id = p.contact_id AND c.deleted_at IS NULL
       ORDER BY p.first_name, p.last_name, p.contact_id`, { organization: page.organization_id!, gram, limit, skip, reach: limit + skip }) })
    const total = Number(rows[0]?.search_total ?? 0)
    const data = rows.filter((row: Record<string, any>) => row.id != null)
    for (const row of data) delete row.search_total
    return { total, limit, skip, data: data as Contact[] }
  }

  /**
   * Groups of live contacts of one organization sharing an e-mail, a phone or a name, ordered by
   * that value: one grouped statement (with the total of groups as a window count) and one read
   * of the page's contacts.
   */
  async ['find-duplicates'](data: ContactDuplicateSearch, _params: ContactParams = {}) {
    const limit = data.$limit ?? 10
    const skip = data.$skip ?? 0
    const value = DUPLICATE_VALUES[data.searchIn]
    const grouped = this.knex('contacts')
      .where('organization_id', data.organization_id!)
      .whereNull('deleted_at')
      .whereRaw(`${value} IS NOT NULL`)
      .groupByRaw(value)
      .havingRaw('count(*) > 1')
    const rows: { value: string; count: number; contact_ids: number[]; total: string }[] = await grouped.clone()
      .select(this.knex.raw(`${value} AS value`), this.knex.raw('count(*)::int AS count'))
      .select(this.knex.raw(`(array_agg(id ORDER BY id))[1:${GROUP_IDS}] AS contact_ids`), this.knex.raw('count(*) OVER () AS total'))
      .orderByRaw(value)
      .limit(limit)
      .offset(skip)
    const total = rows.length > 0
      ? Number(rows[0].total)
      : skip > 0 ? await this.countGroups(grouped, value) : 0
    const ids = rows.flatMap((row) => row.contact_ids)
    const contacts = ids.length > 0 ? await this.knex('contacts').where('organization_id', data.organization_id!).whereIn('id', ids).orderBy('id') : []
    const groups = rows.map(({ total: _total, ...group }) => group)
    return { total, limit, skip, groups, data: contacts as Contact[] }
  }

  /**
   * Folds the duplicates into the primary, in one transaction: every row that references a
   * duplicate (CONTACT_REFERENCES, deleted rows too) is moved onto the primary, the primary's
   * empty fields are filled from the duplicates, and the duplicates are soft-deleted. All of
   * them must be live contacts of the organization (else 404 naming the first that is not).
   * Channel identities stay the primary's unless keep_identity_from names whose to keep; a
   * duplicate holding another one without that is a 409 (refuseOtherIdentities).
   */
  async merge(data: ContactMerge, params: ContactParams = {}) {
    if (data.duplicate_ids.includes(data.primary_id)) throw fieldError('duplicate_ids', 'must not contain primary_id')
    const kept = data.keep_identity_from
    if (kept !== undefined && kept !== data.primary_id && !data.duplicate_ids.includes(kept)) {
      throw fieldError('keep_identity_from', 'must be primary_id or one of duplicate_ids')
    }
    const organizationId = data.organization_id!
    const effects = await this.dbOf(params).transaction(async (trx) => {
      const ids = [data.primary_id, ...data.duplicate_ids]
      const locked: Record<string, any>[] = await trx('contacts')
        .where('organization_id', organizationId).whereIn('id', ids).whereNull('deleted_at')
        .orderBy('id').forUpdate()
      const byId = new Map(locked.map((row) => [row.id as number, row]))
      const missing = ids.find((id) => !byId.has(id))
      if (missing !== undefined) throw new NotFound(`No record found for id '${missing}'`)
      const primary = byId.get(data.primary_id)!
      const duplicates = data.duplicate_ids.map((id) => byId.get(id)!)
      if (kept === undefined) refuseOtherIdentities(primary, duplicates)
      const identity = kept === undefined || kept === data.primary_id ? {} : identityOf(byId.get(kept)!)
      const moved = {} as MergeEffects['moved']
      for (const table of CONTACT_REFERENCES) moved[table] = await this.moveReferences(trx, table, organizationId, data)
      // The kept duplicate gives its identity up before the primary takes it (external_id is unique among live contacts).
      if (Object.keys(identity).length) {
        await trx('contacts').where({ organization_id: organizationId, id: kept })
          .update(Object.fromEntries(Object.keys(identity).map((column) => [column, null])))
      }
      const removed = await trx('contacts')
        .where('organization_id', organizationId).whereIn('id', data.duplicate_ids)
        .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('*')
      const [merged] = await trx('contacts')
        .where({ organization_id: organizationId, id: data.primary_id })
        .update({ ...filledFields(primary, duplicates), ...identity, updated_at: trx.fn.now() }).returning('*')
      return { merged, removed, moved }
    })
    params.mergeEffects = effects
    // Each record the merge changed is an event of its resource (webhooks).
    params.alsoChanged?.push(
      ...effects.removed.map((record: Record<string, any>) => ({ path: 'contacts', method: 'remove' as const, record })),
      { path: 'contacts', method: 'patch', record: effects.merged },
      ...CONTACT_REFERENCES.flatMap((path) => effects.moved[path].map((record: Record<string, any>) => ({ path, method: 'patch' as const, record })))
    )
    return effects.merged as Contact
  }

  private async countGroups(grouped: Knex.QueryBuilder, value: string) {
    const [{ total }]: { total: string }[] = await this.knex.count({ total: '*' }).from(grouped.clone().select(this.knex.raw(value)).as('groups')) as any
    return Number(total)
  }

  private moveReferences(trx: Knex.Transaction, table: string, organizationId: number, data: ContactMerge) {
    return trx(table)
      .where('organization_id', organizationId).whereIn('contact_id', data.duplicate_ids)
      .update({ contact_id: data.primary_id, updated_at: trx.fn.now() }).returning('*')
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'contacts',
  triggerFamilies: ['record_counts', 'contact_name_grams'] as TriggerFamily[]
})
