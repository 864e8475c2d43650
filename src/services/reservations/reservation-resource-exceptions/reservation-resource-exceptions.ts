import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ReservationExceptionService, getOptions } from './reservation-resource-exceptions.class.js'
import {
  checkExceptionTimes, reservationExceptionDataSchema, reservationExceptionDataValidator, reservationExceptionPatchSchema, reservationExceptionPatchValidator, reservationExceptionQuerySchema, reservationExceptionQueryValidator, reservationExceptionSchema
} from './reservation-resource-exceptions.schema.js'
import { reservationExceptionMethods, reservationExceptionPath } from './reservation-resource-exceptions.shared.js'

export * from './reservation-resource-exceptions.class.js'
export * from './reservation-resource-exceptions.schema.js'

export const reservationException = (app: Application) =>
  tenantResource(app, {
    path: reservationExceptionPath,
    service: new ReservationExceptionService(getOptions(app)),
    methods: reservationExceptionMethods,
    description: "Dated exceptions of a resource (date in the resource's time zone): 'special_hours' replace the weekly hours of the date; 'blocked' removes time, the whole day when start_time and end_time are absent.",
    schemas: { result: reservationExceptionSchema, data: reservationExceptionDataSchema, patch: reservationExceptionPatchSchema, query: reservationExceptionQuerySchema },
    validators: { query: reservationExceptionQueryValidator, data: reservationExceptionDataValidator, patch: reservationExceptionPatchValidator },
    references: { resource_id: { table: 'reservation_resources', label: 'reservation resource' } },
    rules: { create: [checkExceptionTimes], patch: [checkExceptionTimes] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationExceptionPath]: ReservationExceptionService
  }
}
