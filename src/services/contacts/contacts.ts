import { BadRequest } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { loadBefore, scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { resolveRecords } from '../../hooks/resolve-records.js'
import { storeCustomFieldValues } from '../custom-fields/custom-field-values.js'
import { ContactService, getOptions, normalizePhone } from './contacts.class.js'
import type { ContactSearch } from './contacts.class.js'
import {
  contactDataResolver, contactDataSchema, contactDataValidator, contactExternalResolver, contactPatchResolver,
  contactPatchSchema, contactPatchValidator, contactQuerySchema, contactQueryValidator, contactResolver,
  contactSchema, contactSearchResultSchema, contactSearchSchema, contactSearchValidator
} from './contacts.schema.js'
import { contactMethods, contactPath } from './contacts.shared.js'

export * from './contacts.class.js'
export * from './contacts.schema.js'

const references = verifyReferences({ company_id: { table: 'companies' }, owned_by_user_id: { table: 'member' } })
const customFieldValues = storeCustomFieldValues('contact', 'name')

/** Keeps phone_normalized (what phone search compares) in step with phone and its country code. */
const storeNormalizedPhone = async (context: HookContext) => {
  const data = context.data as Record<string, any>
  if (data.phone === undefined && data.phone_country_code === undefined) return context
  const current = context.method === 'patch' ? await loadBefore(context) : {}
  const phone = data.phone !== undefined ? data.phone : current.phone
  const countryCode = data.phone_country_code !== undefined ? data.phone_country_code : current.phone_country_code
  data.phone_normalized = normalizePhone(phone, countryCode)
  return context
}

/** Phone search needs the country (both fields) and a term with at least two digits. */
const checkPhoneSearch = async (context: HookContext) => {
  const data = context.data as ContactSearch
  if (data.searchIn !== 'phone') return context
  const errors: Record<string, string> = {}
  if (!data.phone_country_code) errors.phone_country_code = "is required when searchIn is 'phone'"
  if (!data.phone_country_iso) errors.phone_country_iso = "is required when searchIn is 'phone'"
  if ((normalizePhone(data.searchTerm, data.phone_country_code) ?? '').length < 2) errors.searchTerm = 'must contain at least 2 digits'
  if (Object.keys(errors).length) throw new BadRequest('Validation failed', { errors })
  return context
}

/** The join flag only shapes reads; a write's query must not carry it into the UPDATE. */
const dropJoinFlag = async (context: HookContext) => {
  if (context.params.query) delete context.params.query.fastJoinForContactList
  return context
}

export const contact = (app: Application) => {
  app.use(contactPath, new ContactService(getOptions(app)), {
    methods: contactMethods,
    events: [],
    docs: {
      description: 'Contacts (people) of an organization, with name, e-mail and phone search.',
      schemas: {
        result: contactSchema, data: contactDataSchema, patch: contactPatchSchema, query: contactQuerySchema,
        search: { data: contactSearchSchema, result: contactSearchResultSchema }
      }
    }
  } as any)
  app.service(contactPath).hooks({
    around: {
      all: [authenticated, resolveRecords(contactResolver, contactExternalResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(contactQueryValidator), scopeToTenant()],
      create: [
        schemaHooks.validateData(contactDataValidator), references, customFieldValues, storeNormalizedPhone,
        schemaHooks.resolveData(contactDataResolver)
      ],
      patch: [
        schemaHooks.validateData(contactPatchValidator), references, customFieldValues, storeNormalizedPhone,
        schemaHooks.resolveData(contactPatchResolver), dropJoinFlag
      ],
      remove: [dropJoinFlag],
      search: [schemaHooks.validateData(contactSearchValidator), checkPhoneSearch]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [contactPath]: ContactService
  }
}
