import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { loadBefore } from '../../../hooks/tenant-scope.js'
import { emitAfterCommit } from '../../../hooks/deferred-events.js'
import { customMethodId } from '../../../hooks/custom-method-id.js'
import type { AlsoChanged } from '../../../hooks/write-transaction.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { checkedE164, searchedNumber } from '../../../lib/phone-numbers.js'
import { COMPANY_AND_OWNER, CONTACT_REFERENCES, ContactService, getOptions, otherIdentities } from './contacts.class.js'
import type { ContactSearch } from './contacts.class.js'
import {
  contactDataResolver, contactDataSchema, contactDataValidator, contactPatchResolver,
  contactPatchSchema, contactPatchValidator, contactQuerySchema, contactQueryValidator, contactSchema, contactSearchResultSchema, contactSearchSchema, contactSearchValidator,
  contactDuplicateSearchSchema, contactDuplicateSearchValidator, contactDuplicatesSchema, contactMergeSchema, contactMergeValidator
} from './contacts.schema.js'
import { contactMethods, contactPath } from './contacts.shared.js'
import { PERSONAL_DATA_ROLES, personalDataMethods } from './contacts.personal-data.js'

export * from './contacts.class.js'
export * from './contacts.schema.js'

const PHONE_FIELDS = ['phone', 'phone_country_code', 'phone_country_iso'] as const

/**
 * Keeps phone_e164 in step with the phone and its region, and refuses a number that cannot be
 * valid there (400 errors.phone): every write of a contact, single or batch, runs this rule.
 */
const storePhoneE164 = async (context: HookContext) => {
  const data = context.data as Record<string, any>
  if (PHONE_FIELDS.every((field) => data[field] === undefined)) return context
  const current = context.method === 'patch' ? await loadBefore(context) : {}
  const fields = Object.fromEntries(PHONE_FIELDS.map((field) => [field, data[field] !== undefined ? data[field] : current[field]]))
  data.phone_e164 = checkedE164(fields)
  return context
}

/** Phone search needs the region (both fields) and a term with at least two digits of the number. */
const checkPhoneSearch = async (context: HookContext) => {
  const data = context.data as ContactSearch
  if (data.searchIn !== 'phone') return context
  const errors: Record<string, string> = {}
  if (!data.phone_country_code) errors.phone_country_code = "is required when searchIn is 'phone'"
  if (!data.phone_country_iso) errors.phone_country_iso = "is required when searchIn is 'phone'"
  if (searchedNumber(data.searchTerm, data).nationalDigits.length < 2) errors.searchTerm = 'must contain at least 2 digits of the number'
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })
  return context
}

/**
 * After a merge: each record it changed is an event of its resource, for webhooks (in the merge's
 * transaction, when it has one) and sockets (once it has committed): the duplicates removed, the
 * primary patched, every deal, activity, conversation and reservation moved onto it patched.
 */
const announceMerge = async (context: HookContext) => {
  const effects = context.params.mergeEffects
  if (!effects) return
  const changes: AlsoChanged[] = [
    ...effects.removed.map((record: Record<string, any>) => ({ path: 'contacts', method: 'remove' as const, record })),
    { path: 'contacts', method: 'patch', record: effects.merged }
  ]
  for (const path of CONTACT_REFERENCES) {
    const moved: Record<string, any>[] = await (context.app.service(path) as any).rendered(effects.moved[path], context.params)
    changes.push(...moved.map((record) => ({ path, method: 'patch' as const, record })))
  }
  context.params.alsoChanged?.push(...changes)
  for (const { path, method, record } of changes) {
    emitAfterCommit(context.params, context.app.service(path as any) as any, method === 'remove' ? 'removed' : 'patched', record)
  }
}

export const contact = (app: Application) => {
  return tenantResource(app, {
    path: contactPath,
    service: new ContactService(getOptions(app)),
    methods: contactMethods,
    description: 'Contacts (people) of an organization, with name, e-mail and phone search.',
    schemas: { result: contactSchema, data: contactDataSchema, patch: contactPatchSchema, query: contactQuerySchema },
    validators: { query: contactQueryValidator, data: contactDataValidator, patch: contactPatchValidator },
    resolvers: { data: contactDataResolver, patch: contactPatchResolver },
    references: { company_id: { table: 'companies' }, owned_by_user_id: { table: 'member' } },
    customFields: { entity: 'contact', by: 'name' },
    alsoChanges: {
      merge: ['contacts.updated', 'contacts.deleted', 'deals.updated', 'activities.updated', 'conversations.updated', 'reservations.updated'],
      'erase-personal-data': ['contacts.erased', 'deals.updated', 'activities.updated']
    },
    roles: PERSONAL_DATA_ROLES,
    // contacts.erased (docs/privacy.md) reaches sockets like the record events.
    events: ['erased'],
    joins: { flag: 'fastJoinForContactList', list: COMPANY_AND_OWNER },
    rules: { create: [storePhoneE164], patch: [storePhoneE164] },
    // storePhoneE164 reads no reference; the class writes through RecordService.
    checksInWrite: true,
    batch: {
      upsertKeys: {
        email: { matches: (k) => `lower(t.email) = lower(${k})`, sent: (k) => `lower(${k})`, value: (row) => row.email, field: 'email' },
        // The number in E.164, however each record writes it (storePhoneE164 set it).
        phone: { matches: (k) => `t.phone_e164 = ${k}`, sent: (k) => k, value: (row) => row.phone_e164, field: 'phone' },
        external_id: byExternalId
      }
    },
    custom: {
      search: {
        data: contactSearchValidator,
        docs: { data: contactSearchSchema, result: contactSearchResultSchema, description: 'Contacts by name, e-mail or phone (searchIn), in the list envelope.' },
        before: [checkPhoneSearch],
        reads: true
      },
      'find-duplicates': {
        data: contactDuplicateSearchValidator,
        docs: {
          data: contactDuplicateSearchSchema, result: contactDuplicatesSchema,
          description: 'Groups of live contacts sharing an e-mail, a phone or a name (searchIn), for a merge UI: the groups, and their contacts in data.'
        },
        reads: true
      },
      merge: {
        data: contactMergeValidator,
        docs: {
          data: contactMergeSchema, result: contactSchema,
          description: "Merges duplicate_ids into primary_id in one transaction: their deals, activities, conversations and reservations move to the primary, the primary's empty fields are filled from them, and they are deleted. Answers the primary. " +
            "Channel identities (external_id, the channel_* ids, the phone) route a person's messages and replies, so they are never filled from a duplicate: they stay the primary's unless keep_identity_from names the contact whose to keep.",
          errors: {
            409: {
              description: "A duplicate holds a channel identity (external_id, a channel_* id, the phone) other than the primary's, and keep_identity_from is missing: errors names each such field. Nothing changed.",
              example: otherIdentities({ external_id: [43] })
            }
          }
        }
      },
      ...personalDataMethods
    },
    after: { merge: [announceMerge] },
    koa: { before: [customMethodId] }
  })
}

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [contactPath]: ContactService
  }
}
