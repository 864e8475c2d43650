import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../declarations.js'
import { RecordService } from '../record-service.js'
import type { JoinSpec } from '../joins.js'
import { EMBEDDED_DEAL_PRODUCT_COLUMNS } from '../deal-products/deal-products.schema.js'
import type { Deal, DealData, DealPatch, DealQuery } from './deals.schema.js'

export type { Deal, DealData, DealPatch, DealQuery }
export type DealParams = KnexAdapterParams<DealQuery>

// The related records of a deal with exactly the fields of the spec's Deal table.
const PIPELINE_STAGE: JoinSpec = { from: 'pipeline_stage_id', as: 'pipelineStage', table: 'pipeline_stages', columns: ['id', 'name', 'pipeline_id'] }
const PIPELINE: JoinSpec = { from: 'pipeline_id', as: 'pipeline', table: 'pipelines', columns: ['id', 'name'] }
const COMPANY: JoinSpec = {
  from: 'company_id', as: 'company', table: 'companies',
  columns: ['id', 'name', 'organization_id', 'created_by_user_id', 'owned_by_user_id']
}
const CONTACT: JoinSpec = {
  from: 'contact_id', as: 'contact', table: 'contacts',
  columns: ['id', 'first_name', 'last_name', 'email', 'phone', 'phone_country_code', 'company_id', 'avatar_url']
}
const OWNER: JoinSpec = { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: ['id', 'first_name', 'last_name', 'email'], tenant: false }

/** fastJoinForDealsList: company, contact, pipelineStage and owner. */
export const LIST_JOINS = [COMPANY, CONTACT, PIPELINE_STAGE, OWNER]
/**
 * GET /deals/:id: the list joins, the pipeline and the deal products: at most seven queries,
 * however many deal products.
 */
export const RECORD_JOINS = [PIPELINE, PIPELINE_STAGE, COMPANY, CONTACT, OWNER, attachDealProducts]

/** The live deal products of some deals in their embedded form, one query for all of them. */
async function attachDealProducts(db: Knex, deals: Record<string, any>[]) {
  const rows = deals.length === 0 ? [] : await db('deal_products')
    .select('deal_id', ...EMBEDDED_DEAL_PRODUCT_COLUMNS)
    .whereIn('organization_id', [...new Set(deals.map((deal) => deal.organization_id))])
    .whereIn('deal_id', deals.map((deal) => deal.id))
    .whereNull('deleted_at')
    .orderBy('id')
  for (const deal of deals) {
    deal.dealProducts = rows
      .filter((row) => row.deal_id === deal.id)
      .map(({ deal_id: _dealId, ...embedded }) => embedded)
  }
  return deals
}

export class DealService extends RecordService<Deal, DealData, DealParams, DealPatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'deals',
  softDeleteCascade: [{ table: 'deal_products', column: 'deal_id' }]
})
