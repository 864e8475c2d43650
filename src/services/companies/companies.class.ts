import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../declarations.js'
import { RecordService } from '../../engine/record-service.js'
import type { TriggerFamily } from '../../engine/trigger-families.js'
import type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch } from './companies.schema.js'

export type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch }
export type CompanyParams = KnexAdapterParams<CompanyQuery>

export class CompanyService extends RecordService<Company, CompanyData, CompanyParams, CompanyPatch> {
  /** Partial, case-insensitive match on name or website, served by the trigram index. */
  async search(data: CompanySearch) {
    return this.searchColumns(data, ['name', 'website'])
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'companies',
  triggerFamilies: ['record_counts'] as TriggerFamily[]
})
