import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { inBoardOrder, refuseWhileDealsUse } from '../pipelines/pipelines.class.js'
import type { PipelineStage, PipelineStageData, PipelineStagePatch, PipelineStageQuery } from './pipeline-stages.schema.js'
import { databaseOf } from '../../../db.js'

export type { PipelineStage, PipelineStageData, PipelineStagePatch, PipelineStageQuery }
export type PipelineStageParams = KnexAdapterParams<PipelineStageQuery>

export class PipelineStageService extends RecordService<PipelineStage, PipelineStageData, PipelineStageParams, PipelineStagePatch> {
  async _find(params: PipelineStageParams = {}): Promise<any> {
    return super._find(inBoardOrder(params))
  }

  /** Soft delete, unless live deals are in the stage. */
  async _remove(id: NullableId, params: PipelineStageParams = {}): Promise<any> {
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const scoped = { ...params, transaction: { trx } } as PipelineStageParams
      if (id !== null) await refuseWhileDealsUse(trx, await this.storedRow(id, scoped), 'pipeline_stage_id', 'stage')
      return super._remove(id, scoped)
    })
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'pipeline_stages'
})
