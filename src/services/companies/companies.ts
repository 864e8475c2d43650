import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { resolveRecords } from '../../hooks/resolve-records.js'
import { storeCustomFieldValues } from '../custom-fields/custom-field-values.js'
import { CompanyService, getOptions } from './companies.class.js'
import {
  companyDataResolver, companyDataSchema, companyDataValidator, companyExternalResolver, companyPatchResolver,
  companyPatchSchema, companyPatchValidator, companyQuerySchema, companyQueryValidator, companyResolver,
  companySchema, companySearchResultSchema, companySearchSchema, companySearchValidator
} from './companies.schema.js'
import { companyMethods, companyPath } from './companies.shared.js'

export * from './companies.class.js'
export * from './companies.schema.js'

const references = verifyReferences({ owned_by_user_id: { table: 'member' } })
const customFieldValues = storeCustomFieldValues('company', 'name')

export const company = (app: Application) => {
  app.use(companyPath, new CompanyService(getOptions(app)), {
    methods: companyMethods,
    events: [],
    docs: {
      description: 'Companies of an organization.',
      schemas: {
        result: companySchema, data: companyDataSchema, patch: companyPatchSchema, query: companyQuerySchema,
        search: { data: companySearchSchema, result: companySearchResultSchema }
      }
    }
  } as any)
  app.service(companyPath).hooks({
    around: {
      all: [authenticated, resolveRecords(companyResolver, companyExternalResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(companyQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(companyDataValidator), references, customFieldValues, schemaHooks.resolveData(companyDataResolver)],
      patch: [schemaHooks.validateData(companyPatchValidator), references, customFieldValues, schemaHooks.resolveData(companyPatchResolver)],
      search: [schemaHooks.validateData(companySearchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [companyPath]: CompanyService
  }
}
