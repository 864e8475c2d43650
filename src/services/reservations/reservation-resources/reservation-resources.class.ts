import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { ReservationResource, ReservationResourceData, ReservationResourcePatch, ReservationResourceQuery } from './reservation-resources.schema.js'

export type { ReservationResource, ReservationResourceData, ReservationResourcePatch, ReservationResourceQuery }
export type ReservationResourceParams = KnexAdapterParams<ReservationResourceQuery>

/** Bookable people, rooms and equipment, each with a capacity in units. */
export class ReservationResourceService extends RecordService<ReservationResource, ReservationResourceData, ReservationResourceParams, ReservationResourcePatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_resources'
})
