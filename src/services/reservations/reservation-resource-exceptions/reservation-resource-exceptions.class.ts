import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type { ReservationException, ReservationExceptionData, ReservationExceptionPatch, ReservationExceptionQuery } from './reservation-resource-exceptions.schema.js'

export type { ReservationException, ReservationExceptionData, ReservationExceptionPatch, ReservationExceptionQuery }
export type ReservationExceptionParams = KnexAdapterParams<ReservationExceptionQuery>

/** Dated exceptions to a resource's weekly hours: blocked time or special hours. */
export class ReservationExceptionService extends RecordService<ReservationException, ReservationExceptionData, ReservationExceptionParams, ReservationExceptionPatch> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_resource_exceptions'
})
