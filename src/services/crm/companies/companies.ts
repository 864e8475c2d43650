import type { Application } from '../../../declarations.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { USER_SUMMARY } from '../../../engine/read-model.js'
import type { Relation } from '../../../engine/read-model.js'
import { CompanyService, getOptions } from './companies.class.js'
import {
  companyDataResolver, companyDataSchema, companyDataValidator, companyPatchResolver,
  companyPatchSchema, companyPatchValidator, companyQuerySchema, companyQueryValidator, companySchema, companySearchResultSchema, companySearchSchema, companySearchValidator
} from './companies.schema.js'
import { companyMethods, companyPath } from './companies.shared.js'

export * from './companies.class.js'
export * from './companies.schema.js'

/** fastJoinForCompanyList: who created the company and who owns it. */
export const CREATOR_AND_OWNER: Relation[] = [
  { from: 'created_by_user_id', as: 'creator', table: 'users', columns: USER_SUMMARY, tenant: false },
  { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: USER_SUMMARY, tenant: false }
]

export const company = (app: Application) =>
  tenantResource(app, {
    path: companyPath,
    service: new CompanyService(getOptions(app)),
    methods: companyMethods,
    description: 'Companies of an organization.',
    schemas: { result: companySchema, data: companyDataSchema, patch: companyPatchSchema, query: companyQuerySchema },
    validators: { query: companyQueryValidator, data: companyDataValidator, patch: companyPatchValidator },
    resolvers: { data: companyDataResolver, patch: companyPatchResolver },
    references: { owned_by_user_id: { table: 'member' } },
    customFields: { entity: 'company', by: 'name' },
    checksInWrite: true,
    batch: {
      upsertKeys: {
        // The same website: the same host, whatever the case, scheme, path or a leading www. (website_domain, migration 20261123001300).
        domain: { matches: (k) => `website_domain(t.website) = website_domain(${k})`, sent: (k) => `website_domain(${k})`, value: (row) => row.website, field: 'website' },
        name: { matches: (k) => `lower(t.name) = lower(${k})`, sent: (k) => `lower(${k})`, value: (row) => row.name, field: 'name' },
        external_id: byExternalId
      }
    },
    joins: {
      flag: 'fastJoinForCompanyList',
      list: CREATOR_AND_OWNER
    },
    custom: {
      search: {
        data: companySearchValidator,
        docs: { data: companySearchSchema, result: companySearchResultSchema, description: 'Partial, case-insensitive match on name or website.' },
        reads: true
      }
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [companyPath]: CompanyService
  }
}
