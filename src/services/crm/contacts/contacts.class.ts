import { Conflict, NotFound } from '@feathersjs/errors'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { fieldError } from '../../../hooks/errors.js'
import { idOfPath } from '../../../hooks/custom-method-id.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import { StreamedAnswer, wholeText } from '../../../rest.js'
import { exportPersonalData } from '../privacy/export.js'
import { erasePersonalData } from '../privacy/erase.js'
import type { TriggerFamily } from '../../../engine/trigger-families.js'
import type { SearchRule } from '../../../engine/search.js'
import { USER_SUMMARY } from '../../../engine/read-model.js'
import { searchedNumber } from '../../../lib/phone-numbers.js'
import type { Relation } from '../../../engine/read-model.js'
import type { Contact, ContactData, ContactDuplicateSearch, ContactMerge, ContactPatch, ContactQuery, ContactSearch } from './contacts.schema.js'
import type { PersonalDataErasureRequest, PersonalDataExportRequest } from './contacts.personal-data.js'
import { databaseOf } from '../../../db.js'

export type { Contact, ContactData, ContactDuplicateSearch, ContactMerge, ContactPatch, ContactQuery, ContactSearch }
export type ContactParams = KnexAdapterParams<ContactQuery>

/**
 * Every table with a contact_id foreign key to contacts (migrations 20261121000200 deals and
 * activities, 20261121001000 reservations, 20261123000500 conversations), by its service path.
 */
export const CONTACT_REFERENCES = ['deals', 'activities', 'conversations', 'reservations'] as const

/** What a merge changed, for its events: the contacts as the API sends them, the moved records as stored. */
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

/** The value duplicates share, per mode: the expressions search compares, so search and duplicates agree. */
const DUPLICATE_VALUES = {
  email: 'lower(email)',
  phone: 'phone_e164',
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
 * SMS and WhatsApp match and send to (src/services/inbox/channels/contacts.ts). Whoever holds one of them reads
 * the contact's threads, so a merge never takes one from a duplicate unless the caller says so.
 * Each is compared as the channels match it: the phone by its E.164 form.
 */
const IDENTITIES: { field: string; columns: string[]; value: (row: Record<string, any>) => string | null }[] = [
  ...['external_id', 'channel_whatsapp_wa_id', 'channel_whatsapp_user_id', 'channel_messenger_user_id', 'channel_instagram_user_id']
    .map((column) => ({ field: column, columns: [column], value: (row: Record<string, any>) => row[column] })),
  {
    field: 'phone',
    columns: ['phone', 'phone_country_code', 'phone_country_iso', 'phone_e164'],
    value: (row) => row.phone_e164
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
 * How each search mode finds and orders contacts (src/engine/search.ts; the indexes are migration
 * 20261129000100's and 20261130000200's). A name matches in its folded "first last" (search_name):
 * contacts whose full name starts with the term first, then those whose last name does, then the
 * others (newest first). A phone matches when the national digits searched (src/lib/phone-numbers.ts,
 * searchedNumber) are in the national part of its E.164 form, within the calling code searched;
 * phone matches come newest first.
 */
const LAST_NAME = "search_fold(coalesce(t.last_name, ''))"
const SEARCH_RULES: Record<ContactSearch['searchIn'], SearchRule> = {
  name: {
    term: "search_fold(regexp_replace(btrim(:term), '\\s+', ' ', 'g'))",
    texts: ['t.search_name'],
    prefixes: [{ key: 't.search_name' }, { key: LAST_NAME, order: ['t.search_name'] }]
  },
  email: { term: 'lower(btrim(:term))', texts: ['lower(t.email)'], prefixes: [{ key: 'lower(t.email)' }] },
  phone: {
    term: ':term',
    texts: ['t.phone_e164'],
    prefixes: [],
    where: 'starts_with(t.phone_e164, :calling) AND strpos(substr(t.phone_e164, char_length(:calling) + 1), :term) > 0'
  }
}

export class ContactService extends RecordService<Contact, ContactData, ContactParams, ContactPatch> {
  declare options: RecordServiceOptions & { app: Application }

  /** By name (any case or accent), e-mail (any case) or phone number however written; see SEARCH_RULES. */
  async search(data: ContactSearch, _params: ContactParams = {}) {
    if (data.searchIn !== 'phone') return this.searchRecords(SEARCH_RULES[data.searchIn], data)
    const { callingCode, nationalDigits } = searchedNumber(data.searchTerm, data)
    return this.searchRecords(SEARCH_RULES.phone, { ...data, searchTerm: nationalDigits }, { calling: callingCode })
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
    const contacts = ids.length > 0 ? await this._find({ query: { organization_id: data.organization_id!, id: { $in: ids }, $sort: { id: 1 } }, paginate: false } as ContactParams) : []
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
    const effects = await databaseOf(params, this.knex).transaction(async (trx) => {
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
      // merged_into_id: the person's duplicates are exported and erased with them (docs/privacy.md).
      const removed = await this.written(trx, trx('contacts')
        .where('organization_id', organizationId).whereIn('id', data.duplicate_ids)
        .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now(), merged_into_id: data.primary_id }).returning('*'))
      const [merged] = await this.written(trx, trx('contacts')
        .where({ organization_id: organizationId, id: data.primary_id })
        .update({ ...filledFields(primary, duplicates), ...identity, updated_at: trx.fn.now() }).returning('*'))
      return { merged, removed, moved }
    })
    params.mergeEffects = effects
    return effects.merged as Contact
  }

  /** Everything held about the contact's person, as one document (src/services/crm/privacy/export.ts): streamed to a REST request. */
  async ['export-personal-data'](data: PersonalDataExportRequest, params: ContactParams = {}) {
    const chunks = await exportPersonalData(this.options.app, data.organization_id!, idOfPath(params, data))
    return params.streamsAnswer ? new StreamedAnswer(chunks) : JSON.parse(await wholeText(chunks))
  }

  /** Erases the contact's person for good (src/services/crm/privacy/erase.ts); answers the audit record. */
  async ['erase-personal-data'](data: PersonalDataErasureRequest, params: ContactParams = {}) {
    return erasePersonalData(this.options.app, data.organization_id!, idOfPath(params, data), params)
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
  triggerFamilies: ['record_counts'] as TriggerFamily[],
  app
})
