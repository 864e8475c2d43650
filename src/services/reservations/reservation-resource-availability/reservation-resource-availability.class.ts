import type { KnexAdapterParams } from '@feathersjs/knex'
import type { Application } from '../../../declarations.js'
import { RecordService } from '../../../engine/record-service.js'
import type {
  ReservationAvailability, ReservationAvailabilityData, ReservationAvailabilityPatch, ReservationAvailabilityQuery
} from './reservation-resource-availability.schema.js'

export type { ReservationAvailability, ReservationAvailabilityData, ReservationAvailabilityPatch, ReservationAvailabilityQuery }
export type ReservationAvailabilityParams = KnexAdapterParams<ReservationAvailabilityQuery>

/** Weekly recurring hours of a resource, wall-clock in the resource's time zone. */
export class ReservationAvailabilityService extends RecordService<
  ReservationAvailability, ReservationAvailabilityData, ReservationAvailabilityParams, ReservationAvailabilityPatch
> {}

export const getOptions = (app: Application) => ({
  paginate: app.get('paginate'),
  Model: app.get('knex'),
  name: 'reservation_resource_availability'
})
