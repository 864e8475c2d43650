import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { TriggerFamily } from '../../../engine/trigger-families.js'
import type { SearchRule } from '../../../engine/search.js'
import type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch } from './companies.schema.js'

export type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch }
export type CompanyParams = KnexAdapterParams<CompanyQuery>

/** Name (any case or accent) or website (any case); names that start with the term first (src/engine/search.ts). */
const SEARCH_RULE: SearchRule = {
  term: 'search_fold(btrim(:term))',
  texts: ['search_fold(t.name)', 'lower(t.website)'],
  prefixes: [{ key: 'search_fold(t.name)' }]
}

export class CompanyService extends RecordService<Company, CompanyData, CompanyParams, CompanyPatch> {
  async search(data: CompanySearch) {
    return this.searchRecords(SEARCH_RULE, data)
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'companies',
  triggerFamilies: ['record_counts'] as TriggerFamily[]
})
