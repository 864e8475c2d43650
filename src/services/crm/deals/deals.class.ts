import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { TriggerFamily } from '../../../engine/trigger-families.js'
import type { Relation } from '../../../engine/read-model.js'
import { EMBEDDED_DEAL_PRODUCT_COLUMNS } from '../deal-products/deal-products.schema.js'
import type { Deal, DealData, DealPatch, DealQuery } from './deals.schema.js'

export type { Deal, DealData, DealPatch, DealQuery }
export type DealParams = KnexAdapterParams<DealQuery>

// The related records of a deal with exactly the fields of the spec's Deal table.
const PIPELINE_STAGE: Relation = { from: 'pipeline_stage_id', as: 'pipelineStage', table: 'pipeline_stages', columns: ['id', 'name', 'pipeline_id'] }
const PIPELINE: Relation = { from: 'pipeline_id', as: 'pipeline', table: 'pipelines', columns: ['id', 'name'] }
const COMPANY: Relation = {
  from: 'company_id', as: 'company', table: 'companies',
  columns: ['id', 'name', 'organization_id', 'created_by_user_id', 'owned_by_user_id']
}
const CONTACT: Relation = {
  from: 'contact_id', as: 'contact', table: 'contacts',
  columns: ['id', 'first_name', 'last_name', 'email', 'phone', 'phone_country_code', 'company_id', 'avatar_url']
}
const OWNER: Relation = { from: 'owned_by_user_id', as: 'owner', table: 'users', columns: ['id', 'first_name', 'last_name', 'email'], tenant: false }

/** fastJoinForDealsList: company, contact, pipelineStage and owner. */
export const LIST_JOINS = [COMPANY, CONTACT, PIPELINE_STAGE, OWNER]
/** The deal's live products, in their embedded form. */
const DEAL_PRODUCTS: Relation = { as: 'dealProducts', table: 'deal_products', columns: [...EMBEDDED_DEAL_PRODUCT_COLUMNS], many: 'deal_id' }
/** GET /deals/:id: the list joins, the pipeline and the deal products. */
export const RECORD_JOINS = [PIPELINE, PIPELINE_STAGE, COMPANY, CONTACT, OWNER, DEAL_PRODUCTS]

export class DealService extends RecordService<Deal, DealData, DealParams, DealPatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'deals',
  triggerFamilies: ['record_counts'] as TriggerFamily[],
  softDeleteCascade: [{ table: 'deal_products', column: 'deal_id', path: 'deal-products' }]
})
