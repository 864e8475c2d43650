import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { ReservationService, ReservationServiceData, ReservationServicePatch, ReservationServiceQuery } from './reservation-services.schema.js'

export type { ReservationService, ReservationServiceData, ReservationServicePatch, ReservationServiceQuery }
export type ReservationServiceParams = KnexAdapterParams<ReservationServiceQuery>

/** What an organization offers for booking: duration, buffers, notice and advance limits. */
export class ReservationServiceService extends RecordService<ReservationService, ReservationServiceData, ReservationServiceParams, ReservationServicePatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_services'
})
