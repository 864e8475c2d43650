import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { verifyReferences } from '../../hooks/references.js'
import { ReservationExceptionService, getOptions } from './reservation-resource-exceptions.class.js'
import {
  checkExceptionTimes, reservationExceptionDataSchema, reservationExceptionDataValidator, reservationExceptionPatchSchema,
  reservationExceptionPatchValidator, reservationExceptionQuerySchema, reservationExceptionQueryValidator, reservationExceptionResolver,
  reservationExceptionSchema
} from './reservation-resource-exceptions.schema.js'
import { reservationExceptionMethods, reservationExceptionPath } from './reservation-resource-exceptions.shared.js'

export * from './reservation-resource-exceptions.class.js'
export * from './reservation-resource-exceptions.schema.js'

const references = verifyReferences({ resource_id: { table: 'reservation_resources', label: 'reservation resource' } })

export const reservationException = (app: Application) => {
  app.use(reservationExceptionPath, new ReservationExceptionService(getOptions(app)), {
    methods: reservationExceptionMethods,
    events: [],
    docs: {
      description: "Dated exceptions of a resource (date in the resource's time zone): 'special_hours' replace the weekly hours of the date; 'blocked' removes time, the whole day when start_time and end_time are absent.",
      schemas: { result: reservationExceptionSchema, data: reservationExceptionDataSchema, patch: reservationExceptionPatchSchema, query: reservationExceptionQuerySchema }
    }
  } as any)
  app.service(reservationExceptionPath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(reservationExceptionResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationExceptionQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationExceptionDataValidator), references, checkExceptionTimes],
      patch: [schemaHooks.validateData(reservationExceptionPatchValidator), checkExceptionTimes]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationExceptionPath]: ReservationExceptionService
  }
}
