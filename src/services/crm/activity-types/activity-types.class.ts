import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import { containsPattern } from '../../../engine/search.js'
import type { Relation } from '../../../engine/read-model.js'
import type { ActivityType, ActivityTypeData, ActivityTypePatch, ActivityTypeQuery } from './activity-types.schema.js'
import { databaseOf } from '../../../db.js'

export type { ActivityType, ActivityTypeData, ActivityTypePatch, ActivityTypeQuery }
export type ActivityTypeParams = KnexAdapterParams<ActivityTypeQuery>

/** A single read also counts the organization's live activities linked to the type. */
export const ACTIVITIES_COUNT: Relation[] = [{ as: 'activities_count', table: 'activities', columns: [], count: 'activity_type_id' }]

export class ActivityTypeService extends RecordService<ActivityType, ActivityTypeData, ActivityTypeParams, ActivityTypePatch> {
  /** The name filter is a case-insensitive partial match (trigram index). */
  async find(params: ActivityTypeParams = {}): Promise<any> {
    const { name, ...query } = (params.query ?? {}) as Record<string, any>
    if (name === undefined) return super.find({ ...params, query })
    const knex = this.createQuery({ ...params, query })
      .whereRaw('lower(activity_types.name) LIKE ?', [containsPattern(name)])
    return super.find({ ...params, query, knex })
  }

  /**
   * Activities link to their custom type by id and carry its name for filtering; a rename
   * updates that name on every linked activity in the same transaction.
   */
  async _patch(id: NullableId, data: ActivityTypePatch, params: ActivityTypeParams = {}): Promise<any> {
    if (id === null || data.name === undefined) return super._patch(id, data, params)
    return databaseOf(params, this.knex).transaction(async (trx) => {
      const type: ActivityType = await super._patch(id, data, { ...params, transaction: { starting: false, trx } })
      await trx('activities')
        .where({ organization_id: type.organization_id, activity_type_id: type.id })
        .update({ activity_type: type.name })
      return type
    })
  }
}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'activity_types'
})
