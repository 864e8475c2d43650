import { BadRequest } from '@feathersjs/errors'
import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application, HookContext } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { loadBefore, scopeToTenant, targetOrganization } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { storeCustomFieldValues } from '../custom-fields/custom-field-values.js'
import { checkAmounts } from './money.js'
import { DealService, getOptions } from './deals.class.js'
import {
  dealAmountRules, dealDataResolver, dealDataSchema, dealDataValidator, dealExternalResolver, dealPatchResolver,
  dealPatchSchema, dealPatchValidator, dealQuerySchema, dealQueryValidator, dealResolver, dealSchema
} from './deals.schema.js'
import { dealMethods, dealPath } from './deals.shared.js'

export * from './deals.class.js'
export * from './deals.schema.js'

const references = verifyReferences({
  pipeline_id: { table: 'pipelines', where: { type: 'deal' }, label: 'deal pipeline' },
  contact_id: { table: 'contacts' },
  company_id: { table: 'companies' },
  owned_by_user_id: { table: 'member' }
})

/** The deal's stage (sent or stored) must be a live stage of its pipeline (sent or stored). */
const verifyStageOfPipeline = async (context: HookContext<DealService>) => {
  const data = context.data as Record<string, any>
  if (data.pipeline_id === undefined && data.pipeline_stage_id === undefined) return context
  const stored = context.method === 'patch' ? await loadBefore(context) : {}
  const stage = await context.app.get('knex')('pipeline_stages')
    .first('id')
    .where({
      organization_id: await targetOrganization(context),
      id: data.pipeline_stage_id ?? stored.pipeline_stage_id,
      pipeline_id: data.pipeline_id ?? stored.pipeline_id
    })
    .whereNull('deleted_at')
  if (!stage) throw new BadRequest('Invalid reference', { errors: { pipeline_stage_id: "must be a stage of the deal's pipeline" } })
  return context
}

/**
 * Status moves and their dates. Created won or lost: the outcome's date is the creation time.
 * A patch into won sets won_date, into lost sets lost_date, to the update time (now() is fixed
 * for the statement, so it equals updated_at) and clears the other; back to open clears both.
 * A patch that keeps the status keeps its date. On patch the choice is made by the UPDATE itself
 * from the stored row (the database keeps won_date set exactly when won, lost_date exactly when
 * lost), so concurrent status changes cannot leave a stale date behind.
 */
const stampOutcomeDates = async (context: HookContext<DealService>) => {
  const data = context.data as Record<string, any>
  if (data.status === undefined) return context
  const db = context.app.get('knex')
  const dateOf = (outcome: 'won' | 'lost') => {
    if (data.status !== outcome) return null
    return context.method === 'create' ? db.fn.now() : db.raw('coalesce(??, now())', [`deals.${outcome}_date`])
  }
  data.won_date = dateOf('won')
  data.lost_date = dateOf('lost')
  return context
}

const resolveOutput = [schemaHooks.resolveExternal(dealExternalResolver), schemaHooks.resolveResult(dealResolver)]

export const deal = (app: Application) => {
  app.use(dealPath, new DealService(getOptions(app)), {
    methods: dealMethods,
    events: [],
    docs: {
      description: 'Deals of an organization, on a pipeline stage, with status moves (won_date, lost_date) and joined reads.',
      schemas: { result: dealSchema, data: dealDataSchema, patch: dealPatchSchema, query: dealQuerySchema }
    }
  } as any)
  app.service(dealPath).hooks({
    around: {
      all: [authenticated, ...resolveOutput]
    },
    before: {
      all: [schemaHooks.validateQuery(dealQueryValidator), scopeToTenant()],
      create: [
        schemaHooks.validateData(dealDataValidator),
        checkAmounts(dealAmountRules),
        references,
        verifyStageOfPipeline,
        stampOutcomeDates,
        storeCustomFieldValues('deal', 'name'),
        schemaHooks.resolveData(dealDataResolver)
      ],
      patch: [
        schemaHooks.validateData(dealPatchValidator),
        checkAmounts(dealAmountRules),
        references,
        verifyStageOfPipeline,
        stampOutcomeDates,
        storeCustomFieldValues('deal', 'name'),
        schemaHooks.resolveData(dealPatchResolver)
      ]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [dealPath]: DealService
  }
}
