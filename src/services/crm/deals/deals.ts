import { BadRequest } from '@feathersjs/errors'
import type { Application, HookContext } from '../../../declarations.js'
import { loadBefore, targetOrganization } from '../../../hooks/tenant-scope.js'
import { byExternalId } from '../../../engine/batch-writes.js'
import { oncePerCall } from '../../../hooks/per-call.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { checkAmounts } from '../../../lib/money.js'
import { DealService, LIST_JOINS, RECORD_JOINS, getOptions } from './deals.class.js'
import {
  dealAmountRules, dealDataResolver, dealDataSchema, dealDataValidator, dealPatchResolver,
  dealPatchSchema, dealPatchValidator, dealQuerySchema, dealQueryValidator, dealSchema
} from './deals.schema.js'
import { dealMethods, dealPath } from './deals.shared.js'
import { databaseOf } from '../../../db.js'

export * from './deals.class.js'
export * from './deals.schema.js'

/** The deal's stage (sent or stored) must be a live stage of its pipeline (sent or stored). */
const verifyStageOfPipeline = async (context: HookContext<DealService>) => {
  const data = context.data as Record<string, any>
  if (data.pipeline_id === undefined && data.pipeline_stage_id === undefined) return context
  const stored = context.method === 'patch' ? await loadBefore(context) : {}
  const where = {
    organization_id: await targetOrganization(context),
    id: data.pipeline_stage_id ?? stored.pipeline_stage_id,
    pipeline_id: data.pipeline_id ?? stored.pipeline_id
  }
  // Once per call and stage: the deals of a batch mostly share a few.
  const stage = await oncePerCall(context, `stage:${where.organization_id}:${where.id}:${where.pipeline_id}`, async () =>
    databaseOf(context.params, context.app.get('knex'))('pipeline_stages').first('id').where(where).whereNull('deleted_at'))
  if (!stage) throw new BadRequest('Invalid reference', { errors: { pipeline_stage_id: "must be a stage of the deal's pipeline" } })
  return context
}

/**
 * Status moves and their dates. Created won or lost: the outcome's date is the creation time.
 * A patch into won sets won_date, into lost sets lost_date, to the update time (now() is fixed
 * for the statement, so it equals updated_at) and clears the other; back to open clears both.
 * A patch that keeps the status keeps its date. On patch the choice is made by the UPDATE itself
 * from the stored row (the database keeps won_date set exactly when won, lost_date exactly when
 * lost), so concurrent status changes cannot leave a stale date behind. now() is a subquery
 * there: Citus refuses a non-immutable function directly inside COALESCE (the same value).
 */
const stampOutcomeDates = async (context: HookContext<DealService>) => {
  const data = context.data as Record<string, any>
  if (data.status === undefined) return context
  const db = context.app.get('knex')
  const dateOf = (outcome: 'won' | 'lost') => {
    if (data.status !== outcome) return null
    return context.method === 'create' ? db.fn.now() : db.raw('coalesce(??, (SELECT now()))', [`deals.${outcome}_date`])
  }
  data.won_date = dateOf('won')
  data.lost_date = dateOf('lost')
  return context
}

export const deal = (app: Application) =>
  tenantResource(app, {
    path: dealPath,
    service: new DealService(getOptions(app)),
    methods: dealMethods,
    description: 'Deals of an organization, on a pipeline stage, with status moves (won_date, lost_date) and joined reads.',
    schemas: { result: dealSchema, data: dealDataSchema, patch: dealPatchSchema, query: dealQuerySchema },
    validators: { query: dealQueryValidator, data: dealDataValidator, patch: dealPatchValidator },
    resolvers: { data: dealDataResolver, patch: dealPatchResolver },
    references: {
      pipeline_id: { table: 'pipelines', where: { type: 'deal' }, label: 'deal pipeline' },
      contact_id: { table: 'contacts' },
      company_id: { table: 'companies' },
      owned_by_user_id: { table: 'member' }
    },
    customFields: { entity: 'deal', by: 'name' },
    batch: { upsertKeys: { external_id: byExternalId } },
    joins: { flag: 'fastJoinForDealsList', list: LIST_JOINS, record: RECORD_JOINS },
    rules: {
      create: [checkAmounts(dealAmountRules), verifyStageOfPipeline, stampOutcomeDates],
      patch: [checkAmounts(dealAmountRules), verifyStageOfPipeline, stampOutcomeDates]
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [dealPath]: DealService
  }
}
