import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../declarations.js'
import { RecordService } from '../record-service.js'
import { attachRelations, USER_SUMMARY } from '../joins.js'
import type { JoinSpec } from '../joins.js'
import type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch } from './companies.schema.js'

export type { Company, CompanyData, CompanyPatch, CompanyQuery, CompanySearch }
export type CompanyParams = KnexAdapterParams<CompanyQuery>

const PEOPLE: JoinSpec[] = [
  { from: 'created_by_user_id', as: 'creator', table: 'users', columns: USER_SUMMARY, tenant: false },
  { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: USER_SUMMARY, tenant: false }
]

export class CompanyService extends RecordService<Company, CompanyData, CompanyParams, CompanyPatch> {
  async find(params: CompanyParams = {}): Promise<any> {
    const { fastJoinForCompanyList, ...query } = (params.query ?? {}) as Record<string, any>
    const page = await super._find({ ...params, query })
    if (fastJoinForCompanyList) await attachRelations(this.knex, page.data, PEOPLE)
    return page
  }

  /** Partial, case-insensitive match on name or website, served by the trigram index. */
  async search(data: CompanySearch) {
    return this.searchColumns(data, ['name', 'website'])
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'companies'
})
