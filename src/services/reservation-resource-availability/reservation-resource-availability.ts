import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { ReservationAvailabilityService, getOptions } from './reservation-resource-availability.class.js'
import {
  checkWindow, reservationAvailabilityDataSchema, reservationAvailabilityDataValidator, reservationAvailabilityPatchSchema,
  reservationAvailabilityPatchValidator, reservationAvailabilityQuerySchema, reservationAvailabilityQueryValidator,
  reservationAvailabilityResolver, reservationAvailabilitySchema
} from './reservation-resource-availability.schema.js'
import { reservationAvailabilityMethods, reservationAvailabilityPath } from './reservation-resource-availability.shared.js'

export * from './reservation-resource-availability.class.js'
export * from './reservation-resource-availability.schema.js'

const references = verifyReferences({ resource_id: { table: 'reservation_resources', label: 'reservation resource' } })

export const reservationAvailability = (app: Application) => {
  app.use(reservationAvailabilityPath, new ReservationAvailabilityService(getOptions(app)), {
    methods: reservationAvailabilityMethods,
    events: [],
    docs: {
      description: 'Weekly recurring hours of a resource: wall-clock times (HH:MM:SS) in the resource\'s time zone; several windows a day, never overlapping (400).',
      schemas: {
        result: reservationAvailabilitySchema, data: reservationAvailabilityDataSchema,
        patch: reservationAvailabilityPatchSchema, query: reservationAvailabilityQuerySchema
      }
    }
  } as any)
  app.service(reservationAvailabilityPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(reservationAvailabilityResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationAvailabilityQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationAvailabilityDataValidator), references, checkWindow],
      patch: [schemaHooks.validateData(reservationAvailabilityPatchValidator), checkWindow]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationAvailabilityPath]: ReservationAvailabilityService
  }
}
