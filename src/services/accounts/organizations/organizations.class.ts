import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { containsPattern } from '../../../engine/search.js'
import { organizationSchema } from './organizations.schema.js'
import type { Organization, OrganizationData, OrganizationPatch, OrganizationQuery } from './organizations.schema.js'

export type { Organization, OrganizationData, OrganizationPatch, OrganizationQuery }
export type OrganizationParams = KnexAdapterParams<OrganizationQuery>

/** The tenants themselves: a caller sees the organizations they belong to (an API key: its own). */
export class OrganizationService extends RecordService<Organization, OrganizationData, OrganizationParams, OrganizationPatch> {
  async find(params: OrganizationParams = {}): Promise<any> {
    const { searchTerm, ...query } = params.query ?? {}
    const builder = this.createQuery({ ...params, query } as OrganizationParams)
    if (searchTerm) builder.whereRaw('lower(organizations.name) LIKE ?', [containsPattern(searchTerm)])
    return super._find({ ...params, query, knex: builder } as any)
  }

  /** Creating an organization makes the caller its owner, in one transaction. */
  async create(data: any, params: OrganizationParams = {}): Promise<any> {
    const caller = params.caller
    return this.knex.transaction(async (trx) => {
      const [organization] = await this.written(trx, trx('organizations').insert(data).returning('*'))
      await trx('organizations_users').insert({ organization_id: organization.id, user_id: caller!.userId, role: 'owner' })
      return organization as Organization
    })
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'organizations',
  softDelete: false,
  read: { schema: organizationSchema }
})
