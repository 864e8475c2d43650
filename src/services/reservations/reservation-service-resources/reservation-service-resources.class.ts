import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type {
  ReservationServiceResource, ReservationServiceResourceData, ReservationServiceResourcePatch, ReservationServiceResourceQuery
} from './reservation-service-resources.schema.js'

export type { ReservationServiceResource, ReservationServiceResourceData, ReservationServiceResourcePatch, ReservationServiceResourceQuery }
export type ReservationServiceResourceParams = KnexAdapterParams<ReservationServiceResourceQuery>

/** Links of resources to services: required ones, or alternatives of which a booking needs one. */
export class ReservationServiceResourceService extends RecordService<
  ReservationServiceResource, ReservationServiceResourceData, ReservationServiceResourceParams, ReservationServiceResourcePatch
> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_service_resources'
})
