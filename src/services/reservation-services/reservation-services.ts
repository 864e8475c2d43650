import { hooks as schemaHooks } from '@feathersjs/schema'
import type { Application } from '../../declarations.js'
import { authenticated } from '../../hooks/authenticate.js'
import { scopeToTenant } from '../../hooks/tenant-scope.js'
import { checkTimeZone } from '../../reservations/fields.js'
import { checkAmounts } from '../deals/money.js'
import { ReservationServiceService, getOptions } from './reservation-services.class.js'
import {
  reservationServiceDataResolver, reservationServiceDataSchema, reservationServiceDataValidator, reservationServicePatchSchema,
  reservationServicePatchValidator, reservationServiceQuerySchema, reservationServiceQueryValidator, reservationServiceResolver,
  reservationServiceSchema
} from './reservation-services.schema.js'
import { reservationServiceMethods, reservationServicePath } from './reservation-services.shared.js'

export * from './reservation-services.class.js'
export * from './reservation-services.schema.js'

const amounts = checkAmounts({ places: { price: 2 }, currencies: ['currency'] })

export const reservationService = (app: Application) => {
  app.use(reservationServicePath, new ReservationServiceService(getOptions(app)), {
    methods: reservationServiceMethods,
    events: [],
    docs: {
      description: 'Bookable services of an organization (duration, buffers, slot interval, notice and advance limits, time zone).',
      schemas: { result: reservationServiceSchema, data: reservationServiceDataSchema, patch: reservationServicePatchSchema, query: reservationServiceQuerySchema }
    }
  } as any)
  app.service(reservationServicePath).hooks({
    around: {
      all: [authenticated, schemaHooks.resolveResult(reservationServiceResolver)]
    },
    before: {
      all: [schemaHooks.validateQuery(reservationServiceQueryValidator), scopeToTenant()],
      create: [schemaHooks.validateData(reservationServiceDataValidator), checkTimeZone, amounts, schemaHooks.resolveData(reservationServiceDataResolver)],
      patch: [schemaHooks.validateData(reservationServicePatchValidator), checkTimeZone, amounts]
    }
  })
}

declare module '../../declarations.js' {
  interface ServiceTypes {
    [reservationServicePath]: ReservationServiceService
  }
}
