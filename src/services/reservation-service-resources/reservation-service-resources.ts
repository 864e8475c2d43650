import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { ReservationServiceResourceService, getOptions } from './reservation-service-resources.class.js'
import {
  reservationServiceResourceDataSchema, reservationServiceResourceDataValidator, reservationServiceResourcePatchSchema,
  reservationServiceResourcePatchValidator, reservationServiceResourceQuerySchema, reservationServiceResourceQueryValidator,
  reservationServiceResourceResolver, reservationServiceResourceSchema
} from './reservation-service-resources.schema.js'
import { reservationServiceResourceMethods, reservationServiceResourcePath } from './reservation-service-resources.shared.js'

export * from './reservation-service-resources.class.js'
export * from './reservation-service-resources.schema.js'

const references = verifyReferences({
  service_id: { table: 'reservation_services', label: 'reservation service' },
  resource_id: { table: 'reservation_resources', label: 'reservation resource' }
})

export const reservationServiceResource = (app: Application) => {
  app.use(reservationServiceResourcePath, new ReservationServiceResourceService(getOptions(app)), {
    methods: reservationServiceResourceMethods,
    events: [],
    docs: {
      description: 'Links of resources to services. Every required link must be free for a slot; the non-required links are alternatives, one of which a booking takes. A resource is linked to a service once (409 otherwise).',
      schemas: {
        result: reservationServiceResourceSchema, data: reservationServiceResourceDataSchema,
        patch: reservationServiceResourcePatchSchema, query: reservationServiceResourceQuerySchema
      }
    }
  } as any)
  app.service(reservationServiceResourcePath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(reservationServiceResourceResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationServiceResourceQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationServiceResourceDataValidator), references],
      patch: [schemaHooks.validateData(reservationServiceResourcePatchValidator)]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationServiceResourcePath]: ReservationServiceResourceService
  }
}
