import { BadRequest } from '@feathersjs/errors'
import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Knex } from 'knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { Pipeline, PipelineData, PipelinePatch, PipelineQuery } from './pipelines.schema.js'
import { databaseOf } from '../../../db.js'

export type { Pipeline, PipelineData, PipelinePatch, PipelineQuery }
export type PipelineParams = KnexAdapterParams<PipelineQuery>

/** Lists come in board order unless the caller sorts otherwise. */
export const inBoardOrder = <P extends KnexAdapterParams<any>>(params: P): P =>
  params.query?.$sort ? params : { ...params, query: { ...params.query, $sort: { position: 1 } } }

/**
 * Refuses to take a pipeline or stage away from live deals (any status): a deal never points
 * at a deleted pipeline or stage. The message says how many deals are in the way.
 */
export async function refuseWhileDealsUse(
  db: Knex | Knex.Transaction,
  record: { organization_id: number; id: number },
  column: 'pipeline_id' | 'pipeline_stage_id',
  what: string
) {
  const [{ total, open }] = await db('deals')
    .where({ organization_id: record.organization_id, [column]: record.id })
    .whereNull('deleted_at')
    .select(db.raw('count(*)::int as total'), db.raw(`count(*) filter (where status = 'open')::int as open`))
  if (total > 0) {
    throw new BadRequest(
      `This ${what} is used by ${total} deal${total === 1 ? '' : 's'} (${open} open); move them to another ${what} or delete them first`,
      { deals: total, openDeals: open }
    )
  }
}

export class PipelineService extends RecordService<Pipeline, PipelineData, PipelineParams, PipelinePatch> {
  async _find(params: PipelineParams = {}): Promise<any> {
    return super._find(inBoardOrder(params))
  }

  /** A pipeline that deals use keeps its type 'deal'. */
  async _patch(id: NullableId, data: PipelinePatch, params: PipelineParams = {}): Promise<any> {
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const scoped = { ...params, transaction: { trx } } as PipelineParams
      if (id !== null && data.type !== undefined && data.type !== 'deal') {
        const pipeline = await this.storedRow(id, scoped)
        if (pipeline.type === 'deal') await refuseWhileDealsUse(trx, pipeline, 'pipeline_id', 'pipeline')
      }
      return super._patch(id, data, scoped)
    })
  }

  /** Soft-deletes the pipeline and (softDeleteCascade) its stages at the same instant, unless deals still use it. */
  async _remove(id: NullableId, params: PipelineParams = {}): Promise<any> {
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const scoped = { ...params, transaction: { trx } } as PipelineParams
      if (id !== null) await refuseWhileDealsUse(trx, await this.storedRow(id, scoped), 'pipeline_id', 'pipeline')
      return super._remove(id, scoped)
    })
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'pipelines',
  softDeleteCascade: [{ table: 'pipeline_stages', column: 'pipeline_id', path: 'pipeline-stages' }]
})
