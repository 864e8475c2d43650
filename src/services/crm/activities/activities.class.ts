import type { NullableId } from '@feathersjs/feathers'
import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Logger } from 'pino'
import type { Application } from '../../../declarations.js'
import { requestLog } from '../../../logger.js'
import { RecordService } from '../../../engine/record-service.js'
import type { RecordServiceOptions } from '../../../engine/record-service.js'
import type { TriggerFamily } from '../../../engine/trigger-families.js'
import type { Relation } from '../../../engine/read-model.js'
import { containsPattern } from '../../../engine/search.js'
import { httpGeocoder } from './geocoder.js'
import type { Geocoder } from './geocoder.js'
import { databaseOf } from '../../../db.js'
import type {
  Activity, ActivityCompletion, ActivityCompletionResult, ActivityData, ActivityPatch, ActivityQuery
} from './activities.schema.js'

export type { Activity, ActivityCompletion, ActivityCompletionResult, ActivityData, ActivityPatch, ActivityQuery }
export type ActivityParams = KnexAdapterParams<ActivityQuery>

export interface ActivityServiceOptions extends RecordServiceOptions {
  /** Resolves location into location_geocoded after a write; null (the default) turns it off. */
  geocoder?: Geocoder | null
  logger?: Logger
}

const FULL_NAME = "concat_ws(' ', first_name, last_name)"
/** The {id, name} of the pipeline stage a deal is in, read in the same query as the deal. */
const DEAL_STAGE =
  "(SELECT row_to_json(s) FROM (SELECT s.id, s.name FROM pipeline_stages s " +
  'WHERE s.organization_id = deals.organization_id AND s.id = deals.pipeline_stage_id) AS s)'

const user = (from: string, as: string, columns: string[]): Relation =>
  ({ from, as, table: 'users', columns, computed: { full_name: FULL_NAME }, tenant: false })

/** fastJoinForActivityList: the short forms, one query per relation for the whole page. */
export const LIST_JOINS: Relation[] = [
  user('created_by_user_id', 'created_by_user', ['id', 'full_name']),
  user('assigned_to_user_id', 'assigned_to_user', ['id', 'full_name']),
  { from: 'deal_id', as: 'deal', table: 'deals', columns: ['id', 'name'] },
  { from: 'contact_id', as: 'contact', table: 'contacts', columns: ['id', 'full_name'], computed: { full_name: FULL_NAME } },
  { from: 'company_id', as: 'company', table: 'companies', columns: ['id', 'name'] }
]

/** GET /activities/:id: the richer single-record forms. */
export const SINGLE_JOINS: Relation[] = [
  user('created_by_user_id', 'created_by_user', ['id', 'full_name', 'email']),
  user('assigned_to_user_id', 'assigned_to_user', ['id', 'full_name', 'email']),
  { from: 'deal_id', as: 'deal', table: 'deals', columns: ['id', 'name', 'stage'], computed: { stage: DEAL_STAGE } },
  { from: 'contact_id', as: 'contact', table: 'contacts', columns: ['id', 'full_name', 'email'], computed: { full_name: FULL_NAME } },
  { from: 'company_id', as: 'company', table: 'companies', columns: ['id', 'name', 'website'] }
]

export class ActivityService extends RecordService<Activity, ActivityData, ActivityParams, ActivityPatch> {
  declare options: ActivityServiceOptions
  private readonly geocoding = new Set<Promise<void>>()

  async find(params: ActivityParams = {}): Promise<any> {
    const { subject, ...query } = (params.query ?? {}) as Record<string, any>
    if (subject === undefined) return super.find({ ...params, query })
    return super.find({ ...params, query, knex: this.subjectContains(subject, { ...params, query }) })
  }

  /** The subject filter: a case-insensitive partial match served by the trigram index. */
  private subjectContains(subject: string, params: ActivityParams) {
    return this.createQuery(params).whereRaw('lower(activities.subject) LIKE ?', [containsPattern(subject)])
  }

  /** PATCH /activities/:id changes one activity; PATCH /activities (no id) is the bulk completion. */
  async patch(id: NullableId, data: any, params: ActivityParams = {}): Promise<any> {
    if (id === null) return this.complete(data as ActivityCompletion, params)
    return super.patch(id, data, params)
  }

  /**
   * Sets done on the listed activities in one UPDATE, confined by params.query to the caller's
   * organization and to live rows; the ids it did not touch are simply absent from the answer.
   */
  async complete({ ids, done }: ActivityCompletion, params: ActivityParams): Promise<ActivityCompletionResult> {
    const scoped = { ...params, query: { ...params.query, id: { $in: ids } } } as ActivityParams
    // Each activity changed is an activities.updated event (webhooks, when the write collects
    // them: writeTransaction sets params.alsoChanged) and a patched event (announceChanges).
    const rows: Array<{ id: number }> = await this.written(databaseOf(scoped, this.knex), this.scopedWrite(null, scoped)
      .update({ done, updated_at: this.knex.fn.now() })
      .returning('*'))
    params.alsoChanged?.push(...rows.map((record) => ({ path: 'activities', method: 'patch' as const, record })))
    params.changedRecords = rows
    const updated = rows.map((row) => row.id).sort((a, b) => a - b)
    return { updated: updated.length, ids: updated }
  }

  /**
   * Resolves an activity's location in the background when a geocoder is configured. The row
   * is updated only while its location is still the one resolved and nothing set coordinates.
   */
  geocodeLater(activity: Activity, requestId?: string) {
    const { geocoder } = this.options
    if (!geocoder || !activity.location) return
    const job = this.resolveLocation(geocoder, activity)
      .catch((error) => {
        if (this.options.logger) requestLog(this.options.logger, requestId).warn({ err: error, activity: activity.id }, 'geocoding failed')
      })
      .finally(() => this.geocoding.delete(job))
    this.geocoding.add(job)
  }

  private async resolveLocation(geocoder: Geocoder, activity: Activity) {
    const point = await geocoder.geocode(activity.location!)
    if (!point) return
    await this.knex('activities')
      .where({ organization_id: activity.organization_id, id: activity.id, location: activity.location })
      .whereNull('location_geocoded')
      .whereNull('deleted_at')
      .update({ location_geocoded: JSON.stringify(point) })
  }

  /** Resolves once the background geocoding under way has finished. */
  async settled() {
    await Promise.allSettled([...this.geocoding])
  }

  /** Background geocoding settles before the database closes. */
  async teardown() {
    await this.settled()
  }
}

export const getOptions = (app: Application): ActivityServiceOptions => {
  const geocoderUrl = app.get('geocoderUrl')
  return {
    paginate: app.get('paginate'),
    Model: app.get('knex'),
    name: 'activities',
    triggerFamilies: ['record_counts'] as TriggerFamily[],
    multi: ['patch'],
    geocoder: geocoderUrl ? httpGeocoder(geocoderUrl) : null,
    logger: app.get('logger')
  }
}
