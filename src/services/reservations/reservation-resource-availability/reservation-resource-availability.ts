import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ReservationAvailabilityService, getOptions } from './reservation-resource-availability.class.js'
import {
  checkWindow, reservationAvailabilityDataSchema, reservationAvailabilityDataValidator, reservationAvailabilityPatchSchema, reservationAvailabilityPatchValidator, reservationAvailabilityQuerySchema, reservationAvailabilityQueryValidator, reservationAvailabilitySchema
} from './reservation-resource-availability.schema.js'
import { reservationAvailabilityMethods, reservationAvailabilityPath } from './reservation-resource-availability.shared.js'

export * from './reservation-resource-availability.class.js'
export * from './reservation-resource-availability.schema.js'

export const reservationAvailability = (app: Application) =>
  tenantResource(app, {
    path: reservationAvailabilityPath,
    docs: { noun: { one: 'availability window' } },
    service: new ReservationAvailabilityService(getOptions(app)),
    methods: reservationAvailabilityMethods,
    description: "Weekly recurring hours of a resource: wall-clock times (HH:MM:SS) in the resource's time zone; several windows a day, never overlapping (400).",
    schemas: { result: reservationAvailabilitySchema, data: reservationAvailabilityDataSchema, patch: reservationAvailabilityPatchSchema, query: reservationAvailabilityQuerySchema },
    validators: { query: reservationAvailabilityQueryValidator, data: reservationAvailabilityDataValidator, patch: reservationAvailabilityPatchValidator },
    references: { resource_id: { table: 'reservation_resources', label: 'reservation resource' } },
    rules: { create: [checkWindow], patch: [checkWindow] }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationAvailabilityPath]: ReservationAvailabilityService
  }
}
