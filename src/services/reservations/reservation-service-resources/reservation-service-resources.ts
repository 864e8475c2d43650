import type { Application } from '../../../declarations.js'
import { tenantResource } from '../../../engine/tenant-resource.js'
import { ReservationServiceResourceService, getOptions } from './reservation-service-resources.class.js'
import {
  reservationServiceResourceDataSchema, reservationServiceResourceDataValidator, reservationServiceResourcePatchSchema, reservationServiceResourcePatchValidator, reservationServiceResourceQuerySchema, reservationServiceResourceQueryValidator, reservationServiceResourceSchema
} from './reservation-service-resources.schema.js'
import { reservationServiceResourceMethods, reservationServiceResourcePath } from './reservation-service-resources.shared.js'

export * from './reservation-service-resources.class.js'
export * from './reservation-service-resources.schema.js'

export const reservationServiceResource = (app: Application) =>
  tenantResource(app, {
    path: reservationServiceResourcePath,
    service: new ReservationServiceResourceService(getOptions(app)),
    methods: reservationServiceResourceMethods,
    description: 'Links of resources to services. Every required link must be free for a slot; the non-required links are alternatives, one of which a booking takes. A resource is linked to a service once (409 otherwise).',
    schemas: { result: reservationServiceResourceSchema, data: reservationServiceResourceDataSchema, patch: reservationServiceResourcePatchSchema, query: reservationServiceResourceQuerySchema },
    validators: { query: reservationServiceResourceQueryValidator, data: reservationServiceResourceDataValidator, patch: reservationServiceResourcePatchValidator },
    references: {
      service_id: { table: 'reservation_services', label: 'reservation service' },
      resource_id: { table: 'reservation_resources', label: 'reservation resource' }
    }
  })

declare module '../../../declarations.js' {
  interface ServiceTypes {
    [reservationServiceResourcePath]: ReservationServiceResourceService
  }
}
